package cli

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/cli/admin"
)

var consoleLine = regexp.MustCompile(`console:\s+(http://\S+)`)

// TestTheConsoleShowsTheAgentsCotalUpSupervises runs `cotal up` with its web console, starts
// an agent under its supervisor whose runtime prints markup, and reads the console's agents
// view: with a session it lists the agent running, its last output line escaped; without one
// it is refused.
func TestTheConsoleShowsTheAgentsCotalUpSupervises(t *testing.T) {
	bin := cotalBin(t)
	project, mesh := t.TempDir(), t.TempDir()
	up := startUp(t, bin, mesh, "--http", "127.0.0.1:0")
	t.Cleanup(func() { up.stop(t) }) // the supervisor ends its agents before the mesh closes
	var consoleURL string
	// The banner prints the join link first, so the console line may not be written yet.
	if !await.Until(30*time.Second, func() bool {
		m := consoleLine.FindStringSubmatch(up.out.String())
		if m != nil {
			consoleURL = m[1]
		}
		return m != nil
	}) {
		t.Fatalf("cotal up printed no console URL:\n%s", up.out)
	}
	writeAgentFile(t, project, "worker", workerFile)
	if out, stderr, code := runIn(t, bin, project, nil, "start", "worker", "--dir", mesh, "--",
		"sh", "-c", `echo '<script>alert(document.cookie)</script>'; exec sleep 600`); code != 0 {
		t.Fatalf("start: exit %d: %s%s", code, out, stderr)
	}
	awaitAgent(t, bin, mesh, "worker", "running with its line", func(a admin.AgentInfo) bool {
		return a.State == admin.AgentRunning && strings.Contains(a.LastLine, "<script>")
	})

	noRedirect := &http.Client{Timeout: 15 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	base, _, _ := strings.Cut(consoleURL, "/?token=")
	get := func(t *testing.T, path string, cookie *http.Cookie) (int, string) {
		t.Helper()
		r, err := http.NewRequest(http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if cookie != nil {
			r.AddCookie(cookie)
		}
		res, err := noRedirect.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}

	t.Run("without a session the agents view is refused", func(t *testing.T) {
		if code, body := get(t, "/view/agents", nil); code != http.StatusUnauthorized || strings.Contains(body, "worker") {
			t.Errorf("status %d, body %q: want 401 and no agent", code, body)
		}
	})
	t.Run("with a session it lists the agent running, its line escaped", func(t *testing.T) {
		res, err := noRedirect.Get(consoleURL)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		root, cookies := res.Header.Get("Location"), res.Cookies()
		if res.StatusCode != http.StatusSeeOther || len(cookies) != 1 {
			t.Fatalf("sign in: status %d, cookies %v", res.StatusCode, cookies)
		}
		root, _, _ = strings.Cut(root, "?")
		var body string
		await.True(t, 30*time.Second, "the agents view lists worker running", func() bool {
			var code int
			code, body = get(t, root+"view/agents", &http.Cookie{Name: cookies[0].Name, Value: cookies[0].Value})
			return code == http.StatusOK && strings.Contains(body, ">worker") && strings.Contains(body, ">running")
		})
		if strings.Contains(body, "<script>") || !strings.Contains(body, "&lt;script&gt;alert(document.cookie)&lt;/script&gt;") {
			t.Errorf("the last line is not shown escaped:\n%s", body)
		}
		if !strings.Contains(body, ">main<") || !strings.Contains(body, ">0<") {
			t.Errorf("the row lacks its space or restarts:\n%s", body)
		}
	})
}
