//go:build unix

package space_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cotal-go/cotal/internal/testlog"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
)

// TestStartNarrowsAWorldWritableDataDirectory covers docs/hostile-agents.md "A local user" for
// embedders: a data directory of the user's that others may write is narrowed to 0700, with a
// warning.
func TestStartNarrowsAWorldWritableDataDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	logs := &testlog.Buffer{}
	spacetest.New(t, func(o *space.Options) {
		o.Dir, o.Logger = dir, slog.New(slog.NewTextHandler(logs, nil))
	})
	info, err := os.Stat(dir)
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("data directory after Start: %v, %v; want mode 0700", info, err)
	}
	if !strings.Contains(logs.String(), "writable by other users") || !strings.Contains(logs.String(), "was=0777") {
		t.Fatalf("no warning about the narrowed directory in the logs:\n%s", logs)
	}
}

// TestStartRefusesADataDirectoryOfAnotherUser covers docs/hostile-agents.md "A local user" for
// embedders: Start trusts nothing in a directory another user owns.
func TestStartRefusesADataDirectoryOfAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown to another user needs root")
	}
	dir := t.TempDir()
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := space.Start(ctx, space.Options{Dir: dir, Memory: true})
	if err == nil {
		_ = m.Close(ctx)
		t.Fatal("Start succeeded on a directory uid 65534 owns")
	}
	if !strings.Contains(err.Error(), "belongs to uid 65534") || !errors.Is(err, space.ErrUnsafePath) {
		t.Fatalf("Start = %v; want ErrUnsafePath", err)
	}
}
