package chaos_test

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/cotal-go/cotal/internal/testlog"
)

// agentProc is one agentproc process.
type agentProc struct {
	name   string
	cmd    *exec.Cmd
	out    *testlog.Buffer
	exited chan struct{}
	code   int
}

// startAgent runs agentproc with args; the test's cleanup kills it.
func startAgent(t *testing.T, b bins, name string, args ...string) *agentProc {
	t.Helper()
	a := &agentProc{name: name, cmd: exec.Command(b.agent, args...), out: &testlog.Buffer{}, exited: make(chan struct{})}
	a.cmd.Stdout, a.cmd.Stderr = a.out, a.out
	if err := a.cmd.Start(); err != nil {
		t.Fatalf("start agentproc %s: %v", name, err)
	}
	go func() {
		_ = a.cmd.Wait()
		a.code = a.cmd.ProcessState.ExitCode()
		close(a.exited)
	}()
	t.Cleanup(a.kill)
	return a
}

// kill sends SIGKILL and waits for the process to die.
func (a *agentProc) kill() {
	_ = a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.exited
}

// stop sends SIGTERM, so the agent closes its Endpoint, and waits for it to exit.
func (a *agentProc) stop(t *testing.T) {
	t.Helper()
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.exited:
	case <-time.After(30 * time.Second):
		t.Errorf("agentproc %s did not stop within 30s of SIGTERM", a.name)
		a.kill()
	}
}

// done reports whether the process has exited.
func (a *agentProc) done() bool {
	select {
	case <-a.exited:
		return true
	default:
		return false
	}
}

// wait waits for the process to exit on its own and returns its exit status.
func (a *agentProc) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-a.exited:
		return a.code
	case <-time.After(within):
		t.Fatalf("agentproc %s still running after %v; output:\n%s", a.name, within, tail(a.out.String(), 3000))
		return -1
	}
}
