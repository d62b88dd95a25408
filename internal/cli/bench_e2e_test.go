package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The path workload runs `cotal up` in a process of its own and measures both sides through
// it over TCP with minted credentials, and leaves no data directory behind.
func TestBenchPathRunsThroughAMeshOfItsOwn(t *testing.T) {
	bin := cotalBin(t)
	tmp := t.TempDir()
	stdout, stderr, code := runCotalEnv(t, bin, []string{"TMPDIR=" + tmp}, "bench", "path", "--runs", "1",
		"--messages", "100", "--latency-rounds", "5", "--payloads", "64", "--burst", "300", "--json", "--log-level", "warn")
	if code != exitOK {
		t.Fatalf("bench path: exit %d\n%s", code, stderr)
	}
	type row struct {
		Case, Metric string
		Cotal, Raw   *float64
		RawJSON      *float64 `json:"raw_json"`
	}
	var cases = map[string]bool{}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	for _, line := range lines {
		var r row
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("a row is not JSON: %v\n%s", err, line)
		}
		cases[r.Case] = true
		if r.Metric == "delivered msgs/s" && (r.Cotal == nil || r.Raw == nil || r.RawJSON == nil ||
			*r.Cotal <= 0 || *r.Raw <= 0 || *r.RawJSON <= 0) {
			t.Errorf("%s: a side delivered nothing: %s", r.Case, line)
		}
		if r.Metric == "DMs surfaced 5 s after the burst began" && (r.Cotal == nil || r.Raw == nil ||
			*r.Cotal <= 0 || *r.Raw <= 0 || *r.Cotal > 300 || *r.Raw > 300) {
			t.Errorf("%s: a side surfaced none of the burst of 300, or more: %s", r.Case, line)
		}
	}
	for _, want := range []string{"multicast 1→1, 64 B, sync always", "DM, 64 B, sync always",
		"anycast 1→4, 64 B, sync always", "multicast 1→1, 64 B, sync interval", "DM, 64 B, sync interval",
		"anycast 1→4, 64 B, sync interval", "sustained DM, 64 B, sync always"} {
		if !cases[want] {
			t.Errorf("no rows for %q in:\n%s", want, stdout)
		}
	}
	left, _ := filepath.Glob(filepath.Join(tmp, "cotal-bench-up-*"))
	if len(left) > 0 {
		t.Errorf("data directories left behind: %v", left)
	}
	if _, err := os.Stat(tmp); err != nil {
		t.Fatal(err)
	}
}
