package cli

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/testlog"
)

// TestChannelsRmConfirms: rm asks on a terminal, saying how many messages go, and removes only
// on a yes; without a terminal it refuses unless --force (or -f), which asks nothing.
func TestChannelsRmConfirms(t *testing.T) {
	bin := cotalBin(t)
	dir := t.TempDir()
	startUp(t, bin, dir)
	local := []string{"--dir", dir}
	for _, ch := range []string{"typo", "other"} {
		cliCase{args: append([]string{"send", ch, "hello", "--create"}, local...), stdout: []string{"stored in CHAT_main"}}.run(t, bin)
	}
	cliCase{args: append([]string{"channels", "rm", "typo"}, local...), code: exitUsage,
		stderr: []string{"refusing to delete #typo without a terminal to ask on: pass --force (-f) to delete without asking"}}.run(t, bin)
	question := "Really delete every message of #typo (1 message) in space main? It cannot be undone. [y/N] "
	stderr, code := rmOnTerminal(t, bin, question, "n\n", append([]string{"channels", "rm", "typo"}, local...))
	if code != exitError || !strings.Contains(stderr, "kept #typo: the deletion was not confirmed") {
		t.Fatalf("answered n: exit %d, stderr %q", code, stderr)
	}
	cliCase{args: append([]string{"history", "typo"}, local...), stdout: []string{"hello"}}.run(t, bin)
	if _, code := rmOnTerminal(t, bin, question, "y\n", append([]string{"channels", "rm", "typo"}, local...)); code != exitOK {
		t.Fatalf("answered y: exit %d", code)
	}
	cliCase{args: append([]string{"history", "typo"}, local...), code: exitError, stderr: []string{`unknown channel "typo"`}}.run(t, bin)
	cliCase{args: append([]string{"channels", "rm", "other", "-f"}, local...),
		stdout: []string{"removed channel other from space main: 1 message"}}.run(t, bin)
}

// rmOnTerminal runs cotal with args on a pseudo-terminal, waits for question on stderr, types
// answer and returns stderr and the exit code.
func rmOnTerminal(t *testing.T, bin, question, answer string, args []string) (string, int) {
	t.Helper()
	ptm, pts := openPTY(t)
	cmd := exec.Command(bin, args...)
	stderr := &testlog.Buffer{}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, &testlog.Buffer{}, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	await.True(t, 30*time.Second, "the question", func() bool { return strings.Contains(stderr.String(), question) })
	if _, err := ptm.WriteString(answer); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			return stderr.String(), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stderr.String(), exitOK
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("cotal %q did not end after the answer; stderr %q", args, stderr)
		return "", 0
	}
}
