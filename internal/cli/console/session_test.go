package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// port is the port of the console's listener at base.
func port(t *testing.T, base string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

func TestEveryRequestNeedsASession(t *testing.T) {
	f := newFixture(t)
	paths := []string{"/", "/view/roster", "/view/agents", "/events", "/assets/console.js", "/act/mint"}
	for _, path := range paths {
		for _, tc := range []struct {
			auth string
			want int
		}{
			{"none", http.StatusUnauthorized},
			{"cookie only", http.StatusUnauthorized},
			{"path only", http.StatusForbidden},
		} {
			t.Run(fmt.Sprintf("%s with %s is refused", path, tc.auth), func(t *testing.T) {
				method, form := http.MethodGet, url.Values(nil)
				if strings.HasPrefix(path, "/act/") {
					method, form = http.MethodPost, url.Values{"name": {"x"}, "profile": {"agent"}}
				}
				if path == "/" && tc.auth != "path only" {
					return // "/" is the sign-in, below
				}
				if code, body, _ := f.do(t, request{method: method, path: path, auth: tc.auth, form: form}); code != tc.want {
					t.Fatalf("status %d, want %d: %s", code, tc.want, body)
				}
			})
		}
	}
	t.Run("the token itself as a cookie is refused", func(t *testing.T) {
		r, _ := http.NewRequest(http.MethodGet, f.base+"/view/roster", nil)
		r.AddCookie(&http.Cookie{Name: "cotal_console", Value: f.con.Token()})
		r.AddCookie(&http.Cookie{Name: "cotal_console_" + port(t, f.base), Value: f.con.Token()})
		res, err := client.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("status %d, want 401", res.StatusCode)
		}
	})
	for _, tc := range []struct {
		auth string
		want int
	}{{"none", http.StatusUnauthorized}, {"wrong", http.StatusForbidden}} {
		t.Run("signing in with token "+tc.auth+" is refused", func(t *testing.T) {
			if code, body, _ := f.do(t, request{method: http.MethodGet, path: "/", auth: tc.auth}); code != tc.want {
				t.Fatalf("status %d, want %d: %s", code, tc.want, body)
			}
		})
	}
	for _, path := range []string{"/", "/view/roster", "/assets/console.js", "/assets/console.css"} {
		t.Run(path+" of the session is served", func(t *testing.T) {
			if code, body, _ := f.do(t, request{method: http.MethodGet, path: path, auth: "session"}); code != http.StatusOK {
				t.Fatalf("status %d: %s", code, body)
			}
		})
	}
}

func TestTheTokenIsTradedForASessionOfItsOwnOrigin(t *testing.T) {
	f := newFixture(t)
	code, _, h := f.do(t, request{method: http.MethodGet, path: "/", auth: "query"})
	loc := h.Get("Location")
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/s/") || strings.Contains(loc, f.con.Token()) {
		t.Fatalf("status %d location %q, want a 303 to /s/ID/ without the token", code, loc)
	}
	ck := (&http.Response{Header: h}).Cookies()
	if len(ck) != 1 {
		t.Fatalf("cookies %+v, want one", ck)
	}
	c := ck[0]
	t.Run("the cookie is HttpOnly, SameSite=Strict, for / and named by the port", func(t *testing.T) {
		if c.Name != "cotal_console_"+port(t, f.base) || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" {
			t.Fatalf("cookie %+v", c)
		}
	})
	t.Run("the cookie is not the token and expires within 12 hours", func(t *testing.T) {
		if c.Value == f.con.Token() || strings.Contains(loc, c.Value) || c.MaxAge <= 0 || c.MaxAge > int((12*time.Hour).Seconds()) {
			t.Fatalf("cookie %+v: want a value other than the token and the path, and a Max-Age up to 12 h", c)
		}
	})
	t.Run("each sign-in opens its own session", func(t *testing.T) {
		if other := signIn(t, f.con.URL(f.base)); other.root == f.session(t).root || other.cookie.Value == f.session(t).cookie.Value {
			t.Fatalf("two sign-ins share %s", other.root)
		}
	})
	t.Run("the page keeps its URLs out of Referer headers and to its own origin", func(t *testing.T) {
		if h.Get("Referrer-Policy") != "no-referrer" || !strings.Contains(h.Get("Content-Security-Policy"), "default-src 'self'") {
			t.Fatalf("headers %v lack the referrer policy or the CSP", h)
		}
	})
	t.Run("the session under another name of the listener is refused", func(t *testing.T) {
		code, body, _ := f.do(t, request{method: http.MethodGet, path: "/view/roster", auth: "session", host: "localhost:" + port(t, f.base)})
		if code != http.StatusForbidden || !strings.Contains(body, "belongs to another address") {
			t.Fatalf("status %d, want 403: %s", code, body)
		}
	})
	for _, host := range []string{"127.0.0.1:1", "rebind.attacker.example", "rebind.attacker.example:" + port(t, f.base)} {
		for _, req := range []request{
			{method: http.MethodGet, path: "/", auth: "query"},
			{method: http.MethodGet, path: "/", auth: "session"},
			{method: http.MethodGet, path: "/view/channels", auth: "session"},
			{method: http.MethodPost, path: "/act/mint", auth: "session", form: url.Values{"name": {"mallory"}, "profile": {"admin"}}},
		} {
			t.Run(fmt.Sprintf("%s %s with %s under Host %s is refused", req.method, req.path, req.auth, host), func(t *testing.T) {
				req.host = host
				if code, body, _ := f.do(t, req); code != http.StatusMisdirectedRequest {
					t.Fatalf("status %d, want 421: %s", code, body)
				}
			})
		}
	}
}

func TestStateChangesFromAnotherOriginAreRefused(t *testing.T) {
	f := newFixture(t)
	form := url.Values{"channel": {"general"}, "class": {"live"}}
	for _, tc := range []struct {
		name   string
		req    request
		status int
	}{
		{"a POST from another origin is refused", request{method: http.MethodPost, path: "/act/channel", auth: "session", form: form, origin: "http://evil.example"}, http.StatusForbidden},
		{"a POST from a page on another port is refused", request{method: http.MethodPost, path: "/act/channel", auth: "session", form: form, origin: "http://127.0.0.1:1"}, http.StatusForbidden},
		{"a POST from the console's host under another name is refused", request{method: http.MethodPost, path: "/act/channel", auth: "session", form: form, origin: "http://localhost:" + port(t, f.base)}, http.StatusForbidden},
		{"a GET of an action is not allowed", request{method: http.MethodGet, path: "/act/channel?channel=general&class=live", auth: "session"}, http.StatusMethodNotAllowed},
		{"a POST of the session's own page reaches the action", request{method: http.MethodPost, path: "/act/mint", auth: "session", form: url.Values{"name": {"x"}, "profile": {"nope"}}}, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, body, _ := f.do(t, tc.req); code != tc.status {
				t.Fatalf("status %d, want %d: %s", code, tc.status, body)
			}
		})
	}
	t.Run("a POST without Origin is refused", func(t *testing.T) {
		r, _ := http.NewRequest(http.MethodPost, f.base+"/act/channel", strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header.Set("Sec-Fetch-Site", "same-origin")
		res, err := client.Do(f.authed(t, r))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Fatalf("status %d, want 403", res.StatusCode)
		}
	})
}
