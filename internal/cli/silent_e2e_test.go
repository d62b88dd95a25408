package cli

import (
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cotal-go/cotal/internal/testlog"
)

// TestACommandBesideAStoppedMeshSaysItIsNotAnswering: with `cotal up` stopped (SIGSTOP), its
// admin socket still accepts connections but answers nothing; `cotal who` says so within
// answerWarn and gives up after answerWait, naming the data directory and how to resume.
func TestACommandBesideAStoppedMeshSaysItIsNotAnswering(t *testing.T) {
	bin := cotalBin(t)
	dir := t.TempDir()
	up := startUp(t, bin, dir)
	if err := up.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = up.cmd.Process.Signal(syscall.SIGCONT) })

	who := exec.Command(bin, "who", "--dir", dir)
	stderr := &testlog.Buffer{}
	who.Stderr = stderr
	if err := who.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- who.Wait() }()
	var err error
	select {
	case err = <-exited:
	case <-time.After(answerWait + 10*time.Second):
		_ = who.Process.Kill()
		t.Fatalf("cotal who beside a stopped mesh did not end within %v; stderr:\n%s", answerWait+10*time.Second, stderr)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitError {
		t.Fatalf("cotal who exited with %v, want exit %d; stderr:\n%s", err, exitError, stderr)
	}
	for _, want := range []string{"the mesh on " + dir + " is not answering; waiting up to",
		"the mesh is not answering on " + dir, "kill -CONT"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
}
