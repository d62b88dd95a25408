package examples_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// TestObserverOfARunningMesh runs the observer against a mesh it does not own, over TCP with
// an observer .creds file, as against `cotal up`.
func TestObserverOfARunningMesh(t *testing.T) {
	bin(t, "observer") // build first, so the mesh below is not idle while the build runs
	m := spacetest.New(t, func(o *space.Options) { o.Listen = "127.0.0.1:0" })
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	link, err := m.Link("main")
	if err != nil {
		t.Fatal(err)
	}
	cred, err := m.Mint(ctx, provisioner.MintRequest{Space: "main", Name: "watcher",
		Profile: provisioner.ProfileObserver})
	if err != nil {
		t.Fatal(err)
	}
	creds := filepath.Join(t.TempDir(), "observer.creds")
	if err := provisioner.WriteCredsFile(creds, cred); err != nil {
		t.Fatal(err)
	}
	dana, err := m.Endpoint(ctx, space.AgentSpec{Name: "dana", Grants: provisioner.Grants{Role: "reviewer"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := dana.SetStatus(ctx, wire.StatusWaiting, "reviewing PR 7"); err != nil {
		t.Fatal(err)
	}
	eve, err := m.Endpoint(ctx, space.AgentSpec{Name: "eve"})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("once, it prints the roster and exits", func(t *testing.T) {
		requireLines(t, run(t, "observer", "--link", link, "--creds", creds),
			`dana +agent +reviewer +waiting +reviewing PR 7 +\d+s ago`,
			`eve +agent +- +idle +- +\d+s ago`,
			`2 peers`)
	})

	t.Run("with --watch, it prints a line when a peer leaves, until Ctrl-C", func(t *testing.T) {
		w := start(t, "observer", "--link", link, "--creds", creds, "--watch")
		w.waitLine(t, `2 peers`)
		closeCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := eve.Close(closeCtx); err != nil {
			t.Fatal(err)
		}
		w.waitLine(t, `\d\d:\d\d:\d\d eve \(agent\) offline `)
		w.interrupt(t)
	})
}
