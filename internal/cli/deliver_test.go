package cli

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// TestPendingAndStatusReportCopiesLostPastAFullHandoff runs `deliver pending` and `status`
// against a real mesh whose handoff keeps 3 copies per member, after carol, a durable member of
// general, stayed offline through 8 messages: both must report the 5 refused copies
// (docs/durable.md "Gaps and losses").
func TestPendingAndStatusReportCopiesLostPastAFullHandoff(t *testing.T) {
	const bound, sent = 3, 8
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	srv, err := admin.Listen(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := spacetest.New(t, func(o *space.Options) { o.Dir, o.Limits.HandoffPerSubject = dir, bound })
	srv.Serve(m, nil)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
	})
	general := provisioner.Grants{Subscribe: []string{"general"}, AllowPublish: []string{"general"}}
	carol, err := m.Endpoint(ctx, space.AgentSpec{Name: "carol", Grants: general,
		Endpoint: endpoint.Options{Channels: []string{"general"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res, ok := carol.JoinStatus("general"); !ok || res.State != endpoint.JoinedDurable {
		t.Fatalf("carol's join of general: %+v", res)
	}
	if err := carol.Close(ctx); err != nil {
		t.Fatal(err)
	}
	bob, err := m.Endpoint(ctx, space.AgentSpec{Name: "bob", Grants: general})
	if err != nil {
		t.Fatal(err)
	}
	for i := range sent {
		if _, err := bob.Send(ctx, "general", []wire.Part{wire.TextPart(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	await.True(t, 30*time.Second, "every copy for carol handed over or refused", func() bool {
		b, err := m.Pending(ctx, "main", "carol")
		return err == nil && b.Durable.Pending == bound && b.Dropped["general"] == sent-bound
	})

	checkRun(t, []string{"deliver", "pending", "carol", "--dir", dir}, exitOK, []string{
		fmt.Sprintf("durable copies  %d pending", bound),
		fmt.Sprintf("lost on general  %d copies refused: the durable handoff was full of unacknowledged copies", sent-bound),
	}, nil)
	checkRun(t, []string{"status", "--dir", dir}, exitOK, []string{fmt.Sprintf("dropped 0, gaps %d,", sent-bound)}, nil)
}
