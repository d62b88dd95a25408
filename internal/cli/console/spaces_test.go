package console_test

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestEachSpaceOfTheMeshHasItsOwnViews(t *testing.T) {
	f := newFixture(t, "a", "b")
	carol := f.agentIn(t, "b", "carol", "reviewer")
	f.send(t, f.alice, "said in space a")
	f.send(t, carol, "said in space b")
	for _, tc := range []struct {
		name, path    string
		want, without []string
	}{
		{"the roster of b names b's agent only", "/view/roster?space=b", []string{">carol", "reviewer"}, []string{">alice", ">bob"}},
		{"without a space the roster is the first space's", "/view/roster", []string{">alice", ">bob"}, []string{">carol"}},
		{"the history of b's general is b's", "/view/history?space=b&channel=general", []string{"said in space b"}, []string{"said in space a"}},
		{"the channels of b list b's members", "/view/channels?space=b", []string{">general<", "carol"}, []string{"alice"}},
		{"the delivery of b is b's members'", "/view/delivery?space=b", []string{">carol<"}, []string{">alice<"}},
		{"the credentials of b are b's", "/view/credentials?space=b", []string{">carol", ">console"}, []string{">alice"}},
		{"the page of b offers both spaces and shows b", "/?space=b", []string{`data-space="b"`, "<option>a</option>", "<option selected>b</option>", ">carol"}, []string{">alice"}},
	} {
		t.Run(tc.name, func(t *testing.T) { f.viewShows(t, tc.path, tc.want, tc.without) })
	}
	t.Run("a channel of b is configured in b only", func(t *testing.T) {
		code, body, _ := f.do(t, request{method: http.MethodPost, path: "/act/channel?space=b", auth: "session",
			form: url.Values{"channel": {"general"}, "class": {"live"}}})
		if code != http.StatusOK {
			t.Fatalf("status %d: %s", code, body)
		}
		for sp, class := range map[string]string{"a": "durable", "b": "live"} {
			_, body, _ := f.do(t, request{method: http.MethodGet, path: "/view/channels?space=" + sp, auth: "session"})
			if !strings.Contains(body, `<td class="class">`+class+`</td>`) {
				t.Errorf("space %s's general is not %s: %s", sp, class, body)
			}
		}
	})
	t.Run("a credential minted in b is b's", func(t *testing.T) {
		code, body, _ := f.do(t, request{method: http.MethodPost, path: "/act/mint?space=b", auth: "session",
			form: url.Values{"name": {"dave"}, "profile": {"observer"}}})
		if code != http.StatusCreated {
			t.Fatalf("status %d: %s", code, body)
		}
		if _, body, _ := f.do(t, request{method: http.MethodGet, path: "/view/credentials?space=b", auth: "session"}); !strings.Contains(body, `data-name="dave"`) {
			t.Errorf("dave is not among b's credentials: %s", body)
		}
		if _, body, _ := f.do(t, request{method: http.MethodGet, path: "/view/credentials?space=a", auth: "session"}); strings.Contains(body, `data-name="dave"`) {
			t.Errorf("dave is among a's credentials: %s", body)
		}
	})
	t.Run("the event stream of b carries b's messages", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		r, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.base+"/events?space=b", nil)
		res, err := http.DefaultClient.Do(f.authed(t, r))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		f.send(t, carol, "live in space b")
		for lines := bufio.NewScanner(res.Body); lines.Scan(); {
			switch l := lines.Text(); {
			case strings.Contains(l, "said in space a"):
				t.Fatalf("space a's message in b's stream: %s", l)
			case strings.Contains(l, "live in space b"):
				return
			}
		}
		t.Fatal("the stream ended without b's live message")
	})
	for _, tc := range []struct {
		name string
		req  request
	}{
		{"a view of an unknown space is not found", request{method: http.MethodGet, path: "/view/roster?space=c", auth: "session"}},
		{"the page of an unknown space is not found", request{method: http.MethodGet, path: "/?space=c", auth: "session"}},
		{"an action in an unknown space is not found", request{method: http.MethodPost, path: "/act/channel?space=c", auth: "session",
			form: url.Values{"channel": {"general"}, "class": {"live"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, _ := f.do(t, tc.req)
			if code != http.StatusNotFound || !strings.Contains(body, `no such space`) || !strings.Contains(body, `this mesh serves a, b`) {
				t.Fatalf("status %d: %s, want 404 naming the spaces", code, body)
			}
		})
	}
	t.Run("an unknown space still needs the token", func(t *testing.T) {
		if code, _, _ := f.do(t, request{method: http.MethodGet, path: "/view/roster?space=c", auth: "none"}); code != http.StatusUnauthorized {
			t.Fatalf("status %d, want 401", code)
		}
	})
	t.Run("the token URL keeps the space when it opens the session", func(t *testing.T) {
		code, _, h := f.do(t, request{method: http.MethodGet, path: "/?space=b", auth: "query"})
		if loc := h.Get("Location"); code != http.StatusSeeOther || !strings.HasPrefix(loc, "/s/") || !strings.HasSuffix(loc, "/?space=b") {
			t.Fatalf("status %d location %q, want a 303 to /s/ID/?space=b", code, loc)
		}
	})
}
