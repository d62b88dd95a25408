//go:build unix

package cli

import (
	"bytes"
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

	"github.com/cotal-go/cotal/config"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/provisioner"
)

// TestMintRefusesAPlantedSocketBeforeSendingTheSeed covers docs/hostile-agents.md "A local
// user": another user who replaced the admin socket must not receive the seed
// `cotal auth mint --identity` sends, and the command must say so rather than fall back to the
// key store beside it.
func TestMintRefusesAPlantedSocketBeforeSendingTheSeed(t *testing.T) {
	tests := []struct {
		name    string
		plant   func(t *testing.T, sock string)
		refused string
	}{
		{"a socket another user owns is refused", func(t *testing.T, sock string) {
			if os.Geteuid() != 0 {
				t.Skip("chown to another user needs root")
			}
			if err := os.Lchown(sock, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, "belongs to uid 65534"},
		{"a socket others may use is refused", func(t *testing.T, sock string) {
			if err := os.Chmod(sock, 0o666); err != nil {
				t.Fatal(err)
			}
		}, "mode 0666"},
	}
	creds := identityCreds(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			sock := filepath.Join(dir, admin.SocketName)
			requests := serveFake(t, sock)
			tt.plant(t, sock)

			var stdout, stderr bytes.Buffer
			root := newRootCmd(&stdout, &stderr)
			root.SetArgs([]string{"auth", "mint", "--dir", dir, "--name", "eve", "--identity", creds,
				"--out", filepath.Join(t.TempDir(), "eve.creds")})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := root.ExecuteContext(ctx)
			// The data directory check or the socket check may see the planted socket first.
			if !errors.Is(err, admin.ErrUnsafeSocket) && !errors.Is(err, config.ErrUnsafePath) || !strings.Contains(err.Error(), tt.refused) {
				t.Fatalf("auth mint = %v; want a refusal mentioning %q\nstderr: %s", err, tt.refused, stderr.String())
			}
			if n := requests.Load(); n != 0 {
				t.Fatalf("the planted socket received %d requests; want none", n)
			}
			if _, err := os.Stat(filepath.Join(dir, provisioner.KeysFile)); err == nil {
				t.Fatal("auth mint opened a key store beside the planted socket")
			}
		})
	}
}

// serveFake serves an HTTP handler counting requests on a 0600 Unix socket at path.
func serveFake(t *testing.T, path string) *atomic.Int32 {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { requests.Add(1) }),
		ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	return &requests
}

// identityCreds is a .creds file of a credential minted in a store of its own, for
// --identity.
func identityCreds(t *testing.T) string {
	t.Helper()
	store, err := provisioner.Open(t.TempDir(), provisioner.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := store.EnsureSpace("main"); err != nil {
		t.Fatal(err)
	}
	cred, err := store.Mint(provisioner.MintRequest{Space: "main", Name: "eve", Profile: provisioner.ProfileAgent})
	if err != nil {
		t.Fatal(err)
	}
	data, err := cred.Creds()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "eve.creds")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
