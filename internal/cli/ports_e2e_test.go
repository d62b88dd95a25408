package cli

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cotal-go/cotal/space/spacetest"
)

// TestUpOnAPortInUse: a listener's port another process holds fails `cotal up` at once with
// the listener, the address and the flag to change, no nats-server banner before it, and
// nothing created in a data directory that did not exist; a key store that existed is kept.
func TestUpOnAPortInUse(t *testing.T) {
	bin := cotalBin(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	at := taken.Addr().String()
	for _, tc := range []struct {
		name, want string
		args       []string
	}{
		{"client", "the client listener: another process listens on " + at + "; stop it or choose another with --listen",
			[]string{"--listen", at}},
		{"http", "the HTTP listener: another process listens on " + at + "; stop it or choose another with --http",
			[]string{"--listen", "127.0.0.1:0", "--http", at}},
		{"cluster", "the cluster route listener: another process listens on " + at + "; stop it or choose another with --cluster-listen",
			[]string{"--listen", "127.0.0.1:0", "--cluster-name", "c", "--cluster-listen", at, "--cluster-peers", at, "--server-name", "n0"}},
		{"leaf", "the leaf node listener: another process listens on " + at + "; stop it or choose another with --leaf-listen",
			[]string{"--listen", "127.0.0.1:0", "--leaf-listen", at}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "new")
			_, stderr, code := runCotal(t, bin, append([]string{"up", "--dir", dir}, tc.args...)...)
			if code != exitError || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit %d and %q", code, stderr, exitError, tc.want)
			}
			if lines := strings.Count(stderr, "\n"); lines != 1 {
				t.Errorf("stderr has %d lines, want the error alone:\n%s", lines, stderr)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the failed start created the data directory %s (%v)", dir, err)
			}
		})
	}
	t.Run("an existing key store is kept", func(t *testing.T) {
		dir := t.TempDir()
		up := startUp(t, bin, dir)
		up.stop(t)
		before, err := os.ReadFile(filepath.Join(dir, "keys.db"))
		if err != nil {
			t.Fatal(err)
		}
		if _, stderr, code := runCotal(t, bin, "up", "--dir", dir, "--listen", at); code != exitError {
			t.Fatalf("exit %d, stderr:\n%s", code, stderr)
		}
		if after, err := os.ReadFile(filepath.Join(dir, "keys.db")); err != nil || string(after) != string(before) {
			t.Fatalf("the key store changed or went (%v)", err)
		}
	})
	t.Run("two listeners on one port", func(t *testing.T) {
		port := spacetest.FreeAddr(t)
		dir := filepath.Join(t.TempDir(), "new")
		_, stderr, code := runCotal(t, bin, "up", "--dir", dir, "--listen", port, "--http", port)
		if want := "the client listener (" + port + ") and the HTTP listener (" + port + ") share a port; choose another with --http"; code != exitError || !strings.Contains(stderr, want) {
			t.Fatalf("exit %d, stderr:\n%s\nwant %q", code, stderr, want)
		}
	})
}
