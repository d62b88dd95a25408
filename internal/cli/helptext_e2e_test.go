package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestHelpAndStatusSayWhatTheyShow: up's --http help says the web console is served there, and
// status explains its pending+unacknowledged figures under the member table itself.
func TestHelpAndStatusSayWhatTheyShow(t *testing.T) {
	bin := cotalBin(t)
	out, _, code := runCotal(t, bin, "up", "--help")
	var http string
	for line := range strings.Lines(out) {
		if strings.Contains(line, "--http string") {
			http = line
		}
	}
	if code != exitOK || !strings.Contains(http, "web console") {
		t.Errorf("up --help: exit %d, --http line %q; want it to name the web console", code, http)
	}
	dir := t.TempDir()
	startUp(t, bin, dir)
	if _, stderr, code := runCotal(t, bin, "auth", "mint", "--dir", dir, "--name", "alice", "--out", filepath.Join(dir, "alice.creds")); code != exitOK {
		t.Fatalf("mint: exit %d: %s", code, stderr)
	}
	out, stderr, code := runCotal(t, bin, "status", "--dir", dir)
	if code != exitOK || !strings.Contains(out, "MEMBER") ||
		!strings.Contains(out, "each backlog is pending+unacknowledged: not yet delivered to the agent + delivered, not yet acknowledged") {
		t.Fatalf("status: exit %d, stderr %q; want the member table and its legend:\n%s", code, stderr, out)
	}
}
