package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/cotal-go/cotal/internal/await"
)

// TestUpAfterAKillSummarisesTheRecoveryInOneLine kills `cotal up` with SIGKILL after a post and
// a DM were stored, starts it again on the same directory, and expects one recovery line (no
// per-stream lines) and both messages still there.
func TestUpAfterAKillSummarisesTheRecoveryInOneLine(t *testing.T) {
	bin := cotalBin(t)
	dir := t.TempDir()
	up := startUp(t, bin, dir)
	local := []string{"--dir", dir}
	alice, _ := mintCreds(t, bin, dir, "alice", "--subscribe", "general")
	cliCase{args: append([]string{"send", "general", "stored before the kill", "--create"}, local...), stdout: []string{"stored in CHAT_main"}}.run(t, bin)
	cliCase{args: append([]string{"send", "@alice", "a DM before the kill"}, local...), stdout: []string{"stored in DM_main"}}.run(t, bin)

	if err := up.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- up.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("cotal up did not die within 30s of SIGKILL")
	}

	again := startUp(t, bin, dir)
	// The log reaches the test through its own pipe, which may trail the banner's.
	await.True(t, 30*time.Second, "the recovery line", func() bool {
		return strings.Contains(again.out.String(), "recovered the stored state") && strings.Contains(again.out.String(), "press Ctrl-C")
	})
	out := again.out.String()
	if n := strings.Count(out, `msg="recovered the stored state"`); n != 1 || strings.Contains(out, "Restored ") {
		t.Fatalf("the restart after a kill logged %d recovery summaries; want one and no per-stream lines:\n%s", n, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "recovered the stored state") && !containsAll(line, []string{"streams=", "messages=", "consumers="}) {
			t.Errorf("the recovery line does not say what was recovered: %s", line)
		}
	}
	cliCase{args: append([]string{"history", "general"}, local...), stdout: []string{"stored before the kill"}}.run(t, bin)
	tail := startStream(t, bin, "tail", "--link", again.link, "--creds", alice)
	tail.waitLine(t, "dm", "a DM before the kill")
	tail.interrupt(t)
	again.stop(t)
}
