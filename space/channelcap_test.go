package space_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

// TestOneAgentPostsOnAtMostItsShareOfChannels: mallory, allowed to post on team.>, makes 30
// channels, one of which alice posts on too. With a share of 10 channels, the pass deletes her
// posts on 20 of them, keeping the one alice shares, closes her connection and names her;
// alice's post stays.
func TestOneAgentPostsOnAtMostItsShareOfChannels(t *testing.T) {
	t.Parallel()
	const share, made = 10, 30
	m, logs := loggedMesh(t, func(o *space.Options) { o.Limits.ChannelsPerIdentity = share })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n := wire.NewNames("main")
	g := provisioner.Grants{Subscribe: []string{"team.>"}, AllowPublish: []string{"team.>"}}
	mallory, alice := mint(t, m, "mallory", provisioner.ProfileAgent, g), mint(t, m, "alice", provisioner.ProfileAgent, g)
	closed := make(chan struct{})
	p := &peer{nc: connect(t, m, mallory, nats.NoReconnect(), nats.ClosedHandler(func(*nats.Conn) { close(closed) })), cred: mallory}
	a := newPeer(t, m, alice)
	const shared = "team.c29" // last by name: kept only for being shared
	for i := range made {
		channel := fmt.Sprintf("team.c%02d", i)
		if _, err := p.jetStream(t).Publish(ctx, n.ChatSubject(mallory.ID, channel), envelope(t, mallory, channel, "spam")); err != nil {
			t.Fatalf("mallory's post on %s: %v", channel, p.explain(err))
		}
	}
	if _, err := a.jetStream(t).Publish(ctx, n.ChatSubject(alice.ID, shared), envelope(t, alice, shared, "real")); err != nil {
		t.Fatal(a.explain(err))
	}

	rep, err := m.Reconcile(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	if rep.PurgedPosts != made-share {
		t.Errorf("the pass deleted %d posts; want mallory's on the %d channels past her share", rep.PurgedPosts, made-share)
	}
	left := streamState(ctx, t, a, n.ChatStream(), n.Prefix()+".chat."+mallory.ID+".>").State.Subjects
	if len(left) != share || left[n.ChatSubject(mallory.ID, shared)] != 1 {
		t.Errorf("mallory's posts left on %d channels (%v); want %d, the shared %s among them", len(left), left, share, shared)
	}
	if got := streamState(ctx, t, a, n.ChatStream(), n.ChatSubject(alice.ID, shared)).State.Msgs; got == 0 {
		t.Error("alice's post went too")
	}
	await.True(t, 10*time.Second, "mallory's connection closed", func() bool {
		select {
		case <-closed:
			return true
		default:
			return false
		}
	})
	if want := "agent=mallory id=" + mallory.ID; !strings.Contains(logs.String(), want) {
		t.Errorf("the log does not name mallory (%s):\n%.3000s", want, logs)
	}
}
