package cli

import (
	"bufio"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cotal-go/cotal/internal/testlog"
)

// rawMCP is a `cotal mcp` process driven line by line over its stdin and stdout, so a test
// can send what no well-behaved client would.
type rawMCP struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *testlog.Buffer
	exited chan error
}

func startRawMCP(t *testing.T, bin, link, creds string) *rawMCP {
	t.Helper()
	p := &rawMCP{cmd: exec.Command(bin, "mcp", "--link", link, "--creds", creds), lines: make(chan string, 16),
		stderr: &testlog.Buffer{}, exited: make(chan error, 1)}
	p.cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
		p.exited <- p.cmd.Wait()
	}()
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	return p
}

func (p *rawMCP) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		t.Fatalf("write to cotal mcp: %v; stderr:\n%s", err, p.stderr)
	}
}

// answer waits for the next line cotal mcp writes and checks that it holds want.
func (p *rawMCP) answer(t *testing.T, want string) {
	t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok || !strings.Contains(line, want) {
			t.Fatalf("cotal mcp answered %q (open %v), want a line with %s; stderr:\n%s", line, ok, want, p.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("cotal mcp wrote nothing within 30s, want %s; stderr:\n%s", want, p.stderr)
	}
}

// waitExit waits up to within for the process to exit and returns its error.
func (p *rawMCP) waitExit(t *testing.T, within time.Duration) error {
	t.Helper()
	select {
	case err := <-p.exited:
		return err
	case <-time.After(within):
		t.Fatalf("cotal mcp did not exit within %v; stderr:\n%s", within, p.stderr)
		return nil
	}
}

const initializeLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
	`"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// TestMCPStdio: a line that is not JSON is answered with a JSON-RPC parse error and the
// server carries on; told to stop while a tool call waits on a mesh that is down, it exits
// within its bound instead of when the call ends.
func TestMCPStdio(t *testing.T) {
	bin := cotalBin(t)
	dir := t.TempDir()
	up := startUp(t, bin, dir)
	creds := mintAgent(t, bin, dir, "alice")

	t.Run("a malformed line is a parse error and the session goes on", func(t *testing.T) {
		p := startRawMCP(t, bin, up.link, creds)
		p.send(t, `{"jsonrpc": "2.0", "id": 7, "method": `)
		p.answer(t, `"code":-32700`)
		p.send(t, initializeLine)
		p.answer(t, `"id":1,"result"`)
		_ = p.stdin.Close()
		if err := p.waitExit(t, 30*time.Second); err != nil {
			t.Fatalf("cotal mcp exited with %v when its stdin closed; stderr:\n%s", err, p.stderr)
		}
	})

	t.Run("SIGTERM with the mesh down and a call in flight exits promptly", func(t *testing.T) {
		p := startRawMCP(t, bin, up.link, creds)
		p.send(t, initializeLine)
		p.answer(t, `"id":1,"result"`)
		p.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		p.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"cotal_inbox","arguments":{"wait_seconds":60}}}`)
		up.stop(t)
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		// The inbox wait alone would hold the exit for a minute; exiting within half of it
		// shows the exit does not wait for the call, with room for a loaded machine.
		_ = p.waitExit(t, 30*time.Second)
	})
}
