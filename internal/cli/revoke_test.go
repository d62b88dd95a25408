package cli

import (
	"context"
	"testing"
	"time"

	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
)

// TestRevokeByANameTwoCredentialsHoldIsRefused runs `auth revoke NAME` against a real mesh
// where two in-process Endpoints (the only credentials that may share an active name) are
// called worker: it must name both ids and revoke neither.
func TestRevokeByANameTwoCredentialsHoldIsRefused(t *testing.T) {
	dir := t.TempDir()
	srv, err := admin.Listen(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := spacetest.New(t, func(o *space.Options) { o.Dir = dir })
	srv.Serve(m, nil)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
	})
	var ids []string
	for range 2 {
		e, err := m.Endpoint(context.Background(), space.AgentSpec{Name: "worker"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID())
	}
	checkRun(t, []string{"auth", "revoke", "worker", "--dir", dir}, exitError, nil,
		[]string{`2 active credentials are named "worker" in space main`, ids[0], ids[1], "revoke one by id"})
	checkRun(t, []string{"auth", "revoke", ids[0], "--dir", dir}, exitOK, []string{"revoked " + ids[0]}, nil)
	checkRun(t, []string{"auth", "revoke", "worker", "--dir", dir}, exitOK, []string{"revoked " + ids[1]}, nil)
}
