package console_test

import (
	"bufio"
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/internal/cli/console"
)

func TestTheOpsRoutesStayBesideTheConsole(t *testing.T) {
	f := newFixture(t)
	res, err := http.Get(f.base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: status %d, want 200 without the console's token", res.StatusCode)
	}
}

func TestAConsoleNotStartedAnswers503(t *testing.T) {
	con, err := console.New()
	if err != nil {
		t.Fatal(err)
	}
	in := httptest.NewRecorder()
	con.ServeHTTP(in, httptest.NewRequest(http.MethodGet, con.URL("http://127.0.0.1:8222"), nil))
	loc, cookies := in.Header().Get("Location"), in.Result().Cookies()
	if in.Code != http.StatusSeeOther || len(cookies) != 1 {
		t.Fatalf("sign in: status %d, location %q, cookies %v", in.Code, loc, cookies)
	}
	r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8222"+loc+"view/roster", nil)
	r.AddCookie(cookies[0])
	w := httptest.NewRecorder()
	con.ServeHTTP(w, r)
	if w.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503: %s", w.Code, w.Body)
	}
}

// viewShows waits until the view at path answers 200 with every string of want and none of
// without: views read state the mesh updates asynchronously.
func (f *fixture) viewShows(t *testing.T, path string, want, without []string) {
	t.Helper()
	await.Check(t, 10*time.Second, 50*time.Millisecond, func() error {
		code, body, _ := f.do(t, request{method: http.MethodGet, path: path, auth: "session"})
		if code != http.StatusOK {
			return fmt.Errorf("status %d: %s", code, body)
		}
		for _, w := range want {
			if !strings.Contains(body, w) {
				return fmt.Errorf("no %q in %s", w, body)
			}
		}
		for _, w := range without {
			if strings.Contains(body, w) {
				return fmt.Errorf("%q in %s", w, body)
			}
		}
		return nil
	})
}

func TestEachViewShowsItsPartOfTheMesh(t *testing.T) {
	f := newFixture(t)
	f.send(t, f.alice, "hello from alice")
	for _, tc := range []struct {
		name, path string
		want       []string
	}{
		{"the roster names both agents with their status as a word", "/view/roster", []string{">alice", ">bob", "planner", ">idle<"}},
		{"channels show class, replay and members", "/view/channels", []string{">general<", ">durable<", "alice, bob", "/min"}},
		{"delivery shows what waits for each member and the backstop's gaps", "/view/delivery", []string{">alice<", ">bob<", "reader lag", "gaps", "copies lost"}},
		{"health names every component", "/view/health", []string{"broker", "space main delivery", ": ok"}},
		{"plots draw rate and lag", "/view/plots", []string{"<svg", "messages per minute", "backstop lag"}},
		{"credentials list the agents and the console", "/view/credentials", []string{">alice", ">bob", ">console", "revoke"}},
		{"history lists the channels to choose from", "/view/history", []string{"<option>general</option>"}},
		{"history of a channel shows its messages", "/view/history?channel=general", []string{"hello from alice"}},
		{"the page holds every view", "/", []string{"Roster", "Live feed", "Channels", "Channel history", "Durable delivery", "Health", "Credentials", ">alice", `<span class="space">space main</span>`}},
	} {
		t.Run(tc.name, func(t *testing.T) { f.viewShows(t, tc.path, tc.want, nil) })
	}
	t.Run("an unknown view is not found", func(t *testing.T) {
		if code, _, _ := f.do(t, request{method: http.MethodGet, path: "/view/nope", auth: "session"}); code != http.StatusNotFound {
			t.Fatalf("status %d, want 404", code)
		}
	})
}

func TestHistoryPagesGoBackInTime(t *testing.T) {
	f := newFixture(t)
	for i := range 30 {
		f.send(t, f.alice, fmt.Sprintf("message %02d", i))
	}
	for _, tc := range []struct {
		name, query   string
		status        int
		want, without []string
	}{
		{"page 0 is the newest 25", "?channel=general&page=0", 200, []string{"message 29", "message 05", "data-page=\"1\""}, []string{"message 04"}},
		{"page 1 is the rest", "?channel=general&page=1", 200, []string{"message 00", "message 04", "data-page=\"0\""}, []string{"message 05", "data-page=\"2\""}},
		{"a page that is no number is refused", "?channel=general&page=x", 400, nil, nil},
		{"a channel that is no channel is refused", "?channel=a..b", 400, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, _ := f.do(t, request{method: http.MethodGet, path: "/view/history" + tc.query, auth: "session"})
			if code != tc.status {
				t.Fatalf("status %d, want %d: %s", code, tc.status, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("no %q in %s", w, body)
				}
			}
			for _, w := range tc.without {
				if strings.Contains(body, w) {
					t.Errorf("%q in %s", w, body)
				}
			}
		})
	}
}

func TestTheEventStreamSendsStoredThenLiveMessages(t *testing.T) {
	f := newFixture(t)
	f.send(t, f.alice, "stored before the page opened")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.base+"/events", nil)
	res, err := http.DefaultClient.Do(f.authed(t, r))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	lines := bufio.NewScanner(res.Body)
	waitFor := func(text string) {
		t.Helper()
		for lines.Scan() {
			if strings.HasPrefix(lines.Text(), "data: ") && strings.Contains(lines.Text(), text) {
				return
			}
		}
		t.Fatalf("the stream ended without %q: %v", text, lines.Err())
	}
	waitFor("stored before the page opened")
	ctxDM, cancelDM := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelDM()
	f.send(t, f.bob, "live after the page opened")
	waitFor("live after the page opened")
	if _, err := f.alice.SendDM(ctxDM, f.bob.ID(), partsOf("a private word")); err != nil {
		t.Fatal(err)
	}
	waitFor(`"kind":"dm","from":"alice","to":"bob","text":"a private word"`)
}

// TestCommandCredentialsStayOutOfTheTables: the credentials `cotal` commands mint for
// themselves (cli-*) are left out of the credentials and delivery tables, as `cotal auth
// list`, `who` and `status` leave them out.
func TestCommandCredentialsStayOutOfTheTables(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.Mint(ctx, f.m, admin.MintSpec{Space: "main", Name: "cli-send-carol-abc123", Profile: "agent",
		AllowPublish: general}); err != nil {
		t.Fatalf("mint a command's credential: %v", err)
	}
	for _, tc := range []struct{ name, path string }{
		{"the credentials table leaves it out", "/view/credentials"},
		{"the delivery table leaves it out", "/view/delivery"},
	} {
		t.Run(tc.name, func(t *testing.T) { f.viewShows(t, tc.path, []string{">alice"}, []string{"cli-send-carol"}) })
	}
}

// TestAClaimedNameIsShownAsAClaim: mallory connects calling herself bob and posts; the
// history view and the event stream show her by her minted name beside the claim.
func TestAClaimedNameIsShownAsAClaim(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cred, err := admin.Mint(ctx, f.m, admin.MintSpec{Space: f.m.Spaces()[0], Name: "mallory", Profile: "agent",
		Subscribe: general, AllowPublish: general})
	if err != nil {
		t.Fatal(err)
	}
	impostor, err := endpoint.Connect(ctx, endpoint.Options{InProcess: f.m.InProcess(), Space: f.m.Spaces()[0], Name: "bob",
		Creds: cred.Creds, Channels: general})
	if err != nil {
		t.Fatal(err)
	}
	defer impostor.Close(context.Background())
	f.send(t, impostor, "wire the money")
	want := html.EscapeString(`mallory (calls itself "bob")`)
	await.True(t, 10*time.Second, "the history view to show the claim as a claim", func() bool {
		_, body, _ := f.do(t, request{method: http.MethodGet, path: "/view/history?channel=general", auth: "session"})
		return strings.Contains(body, "wire the money") && strings.Contains(body, want)
	})
}
