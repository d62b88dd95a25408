package console_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cotal-go/cotal/internal/cli/admin"
)

// fakeAgents is a supervisor's list, changed by the test.
type fakeAgents struct {
	mu   sync.Mutex
	rows []admin.AgentInfo
}

func (a *fakeAgents) List() []admin.AgentInfo {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]admin.AgentInfo{}, a.rows...)
}

func (a *fakeAgents) set(rows ...admin.AgentInfo) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rows = rows
}

// TestTheAgentsViewShowsTheSupervisedAgents: before a supervisor is wired the view says there
// is none; after, it lists each runtime with its state, restarts, uptime and last output line,
// and follows the supervisor's changes on every reload.
func TestTheAgentsViewShowsTheSupervisedAgents(t *testing.T) {
	f := newFixture(t)
	f.viewShows(t, "/view/agents", []string{"supervises no agents"}, nil)
	sup := &fakeAgents{}
	f.con.ShowAgents(sup)
	f.viewShows(t, "/view/agents", []string{"no agent is supervised", "cotal start NAME"}, nil)
	sup.set(admin.AgentInfo{Space: "main", Name: "worker", ID: "UWORKER", PID: 4242, State: admin.AgentRunning,
		Started: time.Now().Add(-90 * time.Second), Restarts: 2, Presence: admin.PresenceOnline, LastLine: "built 3 packages"},
		admin.AgentInfo{Space: "main", Name: "crasher", ID: "UCRASH", State: admin.AgentFailed, Restarts: 4,
			ExitStatus: "exit status 3", LastLine: "crashing"})
	for _, tc := range []struct {
		name, path string
		want       []string
	}{
		{"the view lists each agent with its state, restarts, uptime and last line", "/view/agents",
			[]string{">worker", "pid 4242", ">running", ">online<", ">2<", "1m3", "built 3 packages", ">crasher", ">failed", "exit status 3", ">4<", "crashing"}},
		{"the page holds the view beside the roster", "/", []string{"Supervised agents", `href="#agents"`, "built 3 packages"}},
	} {
		t.Run(tc.name, func(t *testing.T) { f.viewShows(t, tc.path, tc.want, nil) })
	}
	t.Run("a stopped agent leaves the view at its next reload", func(t *testing.T) {
		sup.set()
		f.viewShows(t, "/view/agents", []string{"no agent is supervised"}, []string{"worker"})
	})
}

// TestTheAgentsViewEscapesWhatARuntimePrinted is the attack of a runtime (or a peer whose
// message it echoes) on the operator's browser: its last output line, and the name of its
// agent file, carry markup, a script, terminal controls and a bidi override. None of it is
// markup or raw on the page.
func TestTheAgentsViewEscapesWhatARuntimePrinted(t *testing.T) {
	f := newFixture(t)
	sup := &fakeAgents{}
	f.con.ShowAgents(sup)
	sup.set(admin.AgentInfo{Space: "main", Name: `x"><img src=x onerror=alert(1)>`, ID: "UX", State: admin.AgentRunning,
		LastLine: "<script>alert(document.cookie)</script>\x1b]0;owned\x07 \u202eevil"})
	for _, path := range []string{"/view/agents", "/"} {
		t.Run(path+" shows the line as text", func(t *testing.T) {
			f.viewShows(t, path, []string{"&lt;script&gt;alert(document.cookie)&lt;/script&gt;", `\x1b]0;owned\a`, `\u202eevil`,
				"&lt;img src=x onerror=alert(1)&gt;"},
				[]string{"<script>alert(document.cookie)", "<img src=x", "\x1b", "\u202e"})
		})
	}
}

// TestTheAgentsViewNeedsASession is the attack of a web page in the operator's browser: it
// can make the browser send requests to the console, with or without the cookie, under the
// listener's name or a rebound one, but without the session's path, cookie and Host together
// the agents view is refused.
func TestTheAgentsViewNeedsASession(t *testing.T) {
	f := newFixture(t)
	sup := &fakeAgents{}
	sup.set(admin.AgentInfo{Space: "main", Name: "worker", State: admin.AgentRunning, LastLine: "secret output"})
	f.con.ShowAgents(sup)
	for _, tc := range []struct {
		name string
		req  request
		want int
	}{
		{"no session", request{method: http.MethodGet, path: "/view/agents", auth: "none"}, http.StatusUnauthorized},
		{"the cookie without the session's path", request{method: http.MethodGet, path: "/view/agents", auth: "cookie only"}, http.StatusUnauthorized},
		{"the session's path without its cookie", request{method: http.MethodGet, path: "/view/agents", auth: "path only"}, http.StatusForbidden},
		{"the token in the query", request{method: http.MethodGet, path: "/view/agents", auth: "query"}, http.StatusUnauthorized},
		{"a wrong token", request{method: http.MethodGet, path: "/view/agents", auth: "wrong"}, http.StatusUnauthorized},
		{"the session under a rebound Host", request{method: http.MethodGet, path: "/view/agents", auth: "session",
			host: "rebind.attacker.example:" + port(t, f.base)}, http.StatusMisdirectedRequest},
		{"the session under another name of the listener", request{method: http.MethodGet, path: "/view/agents", auth: "session",
			host: "localhost:" + port(t, f.base)}, http.StatusForbidden},
	} {
		t.Run("a request with "+tc.name+" is refused", func(t *testing.T) {
			code, body, _ := f.do(t, tc.req)
			if code == http.StatusOK || strings.Contains(body, "secret output") {
				t.Fatalf("status %d, body %q: the agents were shown", code, body)
			}
			if code != tc.want {
				t.Errorf("status %d, want %d: %s", code, tc.want, body)
			}
		})
	}
	t.Run("the session itself is answered", func(t *testing.T) {
		f.viewShows(t, "/view/agents", []string{"secret output"}, nil)
	})
}
