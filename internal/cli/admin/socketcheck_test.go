//go:build unix

package admin

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// plant serves a fake admin API on dir's socket, as another local user would to catch a
// seed, and counts the requests that reach it.
func plant(t *testing.T, dir string) *atomic.Int32 {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(dir, SocketName))
	if err != nil {
		t.Fatal(err)
	}
	var got atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		got.Add(1)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":"U1","creds":""}`))
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	if err := os.Chmod(filepath.Join(dir, SocketName), 0o600); err != nil {
		t.Fatal(err)
	}
	return &got
}

// TestDialRefusesAPlantedSocket covers docs/hostile-agents.md "A local user":
// `cotal auth mint --identity` sends a seed over the admin socket, so the client checks whose
// socket it is before it sends it.
func TestDialRefusesAPlantedSocket(t *testing.T) {
	asRoot := func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("chown to another user needs root")
		}
	}
	tests := []struct {
		name    string
		prepare func(t *testing.T, dir string)
		refused string // "" means the request goes through
	}{
		{"the user's own 0600 socket in a private directory is used", func(*testing.T, string) {}, ""},
		{"a socket another user owns is refused", func(t *testing.T, dir string) {
			asRoot(t)
			if err := os.Lchown(filepath.Join(dir, SocketName), 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, "belongs to uid 65534"},
		{"a socket of mode 0666 is refused", func(t *testing.T, dir string) {
			if err := os.Chmod(filepath.Join(dir, SocketName), 0o666); err != nil {
				t.Fatal(err)
			}
		}, "mode 0666 lets others use it"},
		{"a socket in a world-writable directory is refused", func(t *testing.T, dir string) {
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
		}, "others could replace the socket"},
		{"a socket in a directory another user owns is refused", func(t *testing.T, dir string) {
			asRoot(t)
			if err := os.Chown(dir, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, "its directory belongs to uid 65534"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			got := plant(t, dir)
			tt.prepare(t, dir)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := Dial(ctx, dir)
			if err == nil {
				_, err = c.Mint(ctx, MintSpec{Space: "main", Name: "eve", Profile: "agent", IdentitySeed: "SUAsecretseed"})
			}
			if tt.refused == "" {
				if err != nil || got.Load() != 1 {
					t.Fatalf("Dial+Mint = %v with %d requests served; want the request through", err, got.Load())
				}
				return
			}
			if !errors.Is(err, ErrUnsafeSocket) || !strings.Contains(err.Error(), tt.refused) {
				t.Fatalf("Dial+Mint = %v; want ErrUnsafeSocket mentioning %q", err, tt.refused)
			}
			if n := got.Load(); n != 0 {
				t.Fatalf("the planted socket received %d requests; want none", n)
			}
		})
	}
}

func TestDialWithoutASocketIsNoMesh(t *testing.T) {
	for _, dir := range []string{t.TempDir(), filepath.Join(t.TempDir(), "absent")} {
		if _, err := Dial(context.Background(), dir); !errors.Is(err, ErrNoMesh) {
			t.Fatalf("Dial(%s) = %v, want ErrNoMesh", dir, err)
		}
	}
}

func TestDialRefusesARegularFileForTheSocket(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, SocketName), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Dial(context.Background(), dir); !errors.Is(err, ErrUnsafeSocket) || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("Dial = %v; want ErrUnsafeSocket: not a socket", err)
	}
}
