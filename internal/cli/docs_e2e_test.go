package cli

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cotal-go/cotal/space/spacetest"
)

// docBlock is the first sh block of the docs page path, as a user would paste it, with
// `go run .` replaced by bin, each port of ports by a free one, and /tmp/ by a directory of
// the test's own. It returns the block and the replacements of the ports.
func docBlock(t *testing.T, path, bin string, ports ...string) (string, map[string]string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```sh\n(.*?)```").FindSubmatch(data)
	if m == nil {
		t.Fatalf("%s has no sh block", path)
	}
	block := strings.ReplaceAll(string(m[1]), "/tmp/", t.TempDir()+"/")
	block = strings.ReplaceAll(block, "go run .", bin)
	free := map[string]string{}
	for _, p := range ports {
		_, port, _ := net.SplitHostPort(spacetest.FreeAddr(t))
		free[p] = port
		block = strings.ReplaceAll(block, ":"+p, ":"+port)
	}
	return block, free
}

// runDocBlock runs block with bash in dir, in a process group of its own whose processes
// (the block's `&` lines) are killed at cleanup, and fails the test unless it exits 0.
func runDocBlock(t *testing.T, dir, block string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-c", block)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A file, not a pipe: the block's background processes keep writing after bash exits,
	// and Wait would wait for them to close a pipe.
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	err = cmd.Wait()
	text, _ := os.ReadFile(out.Name())
	if err != nil {
		t.Fatalf("the block exited with %v:\n%s\noutput:\n%s", err, block, text)
	}
	return string(text)
}

// TestTheClusterRecipeRunsAsPasted runs the three-node block of docs/cluster.md as a user
// pastes it, on ports and directories of its own: the nodes start in the background, the
// mints wait for the key-store node, and the send through node 1 is stored; bob's tail on
// node 3, started by the block, shows the post.
func TestTheClusterRecipeRunsAsPasted(t *testing.T) {
	t.Parallel()
	bin := cotalBin(t)
	block, _ := docBlock(t, filepath.Join("..", "..", "docs", "cluster.md"), bin, "4222", "4223", "4224", "6222", "6223", "6224")
	out := runDocBlock(t, t.TempDir(), block)
	if !strings.Contains(out, "stored in CHAT_main") {
		t.Fatalf("the block's send was not stored:\n%s", out)
	}
}

// TestTheLeafRecipeRunsAsPasted runs the block of docs/leaf.md as a user pastes it: a hub, a
// laptop linked to it, a post on the laptop, which then reads back from the hub's history.
func TestTheLeafRecipeRunsAsPasted(t *testing.T) {
	t.Parallel()
	bin := cotalBin(t)
	block, ports := docBlock(t, filepath.Join("..", "..", "docs", "leaf.md"), bin, "4222", "4322", "7422")
	dir := t.TempDir()
	out := runDocBlock(t, dir, block)
	if !strings.Contains(out, "stored in CHAT_main") || !strings.Contains(out, "leaf of nats-leaf://") {
		t.Fatalf("the block did not post on a linked laptop:\n%s", out)
	}
	historyHas(t, bin, "cotal://127.0.0.1:"+ports["4222"]+"/main", filepath.Join(dir, "hubbie.creds"), "hello from the laptop")
}
