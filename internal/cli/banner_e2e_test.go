package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cotal-go/cotal/internal/await"
)

// TestUpBannersMintHintMintsAProvisionedAgent runs the mint command `cotal up`'s banner
// suggests, as printed: with the mesh running it provisions by default, so the hint needs no
// --provision.
func TestUpBannersMintHintMintsAProvisionedAgent(t *testing.T) {
	bin := cotalBin(t)
	dir := t.TempDir()
	up := startUp(t, bin, dir)
	await.True(t, 30*time.Second, "the whole banner", func() bool { return strings.Contains(up.out.String(), "press Ctrl-C to stop") })
	var hint string
	for line := range strings.Lines(up.out.String()) {
		if s := strings.TrimSpace(line); strings.HasPrefix(s, "cotal auth mint ") {
			hint = s
		}
	}
	if hint == "" || strings.Contains(hint, "--provision") {
		t.Fatalf("banner's mint hint %q; want one without --provision:\n%s", hint, up.out)
	}
	args := append(strings.Fields(hint)[1:], "--out", filepath.Join(dir, "alice.creds"), "--json")
	stdout, stderr, code := runCotal(t, bin, args...)
	var minted struct{ Provisioned bool }
	if code != exitOK || json.Unmarshal([]byte(stdout), &minted) != nil || !minted.Provisioned {
		t.Fatalf("the banner's hint: exit %d, stdout %q, stderr %q; want a provisioned agent", code, stdout, stderr)
	}
}
