package cli

import (
	"strings"
	"testing"
)

// TestAStreamingCommandsIdentityLeavesWithIt: the credential `tail` mints for itself beside
// `cotal up` is revoked when it exits and leaves the registry at once, not a day later when
// its JWT expires, and its end is no warning in up's log.
func TestAStreamingCommandsIdentityLeavesWithIt(t *testing.T) {
	bin := cotalBin(t)
	dir := t.TempDir()
	up := startUp(t, bin, dir)
	local := []string{"--dir", dir}
	tail := startStream(t, bin, append([]string{"tail"}, local...)...)
	tail.waitStderr(t, "following")
	during := cliCase{args: append([]string{"auth", "list", "--all"}, local...)}.run(t, bin)
	if !strings.Contains(during, "cli-tail-") {
		t.Fatalf("auth list --all while tail runs has no cli-tail row:\n%s", during)
	}
	tail.interrupt(t)
	after := cliCase{args: append([]string{"auth", "list", "--all"}, local...)}.run(t, bin)
	if strings.Contains(after, "cli-tail-") {
		t.Fatalf("auth list --all after tail exited still lists its credential:\n%s", after)
	}
	up.stop(t)
	if out := up.out.String(); strings.Contains(out, "level=WARN") || strings.Contains(out, `name=""`) {
		t.Fatalf("up's log has a warning or a nameless line:\n%s", out)
	}
}
