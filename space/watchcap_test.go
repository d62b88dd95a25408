package space_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/testlog"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// An agent that creates more watches on the presence bucket than limits.watches_per_identity
// keeps only that many: the on-create check learns the creator from the JetStream API audit and
// deletes the rest, logging once naming the agent. The bucket's cap is left to the others, so a
// new agent's presence watch works. A DM crossing the storage import carries no detail of its
// sender's connection: only the JetStream API import shares the requester's identity
// (docs/hostile-agents.md "Bounded shares").
func TestAnIdentityKeepsOnlyItsShareOfThePresenceWatches(t *testing.T) {
	t.Parallel()
	const perIdentity, bucketCap, tries = 4, 20, 3 * 20
	logs := &testlog.Buffer{}
	m := spacetest.New(t, func(o *space.Options) {
		o.Limits.WatchesPerIdentity, o.Limits.WatchConsumers = perIdentity, bucketCap
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	grants := provisioner.Grants{Subscribe: []string{"general"}, AllowPublish: []string{"general"}}
	mallory := mint(t, m, "mallory", provisioner.ProfileAgent, grants)
	n := wire.NewNames("main")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := newPeer(t, m, mallory)
	stream := wire.KVStream(n.PresenceBucket())
	refused := 0
	for i := range tries {
		if err := createHog(t, p, stream, fmt.Sprintf("hog%d", i)); err != nil {
			refused++
		}
	}
	held := func() int {
		count := 0
		for i := range tries {
			if _, err := p.jetStream(t).Consumer(ctx, stream, fmt.Sprintf("hog%d", i)); err == nil {
				count++
			}
		}
		return count
	}
	await.True(t, 10*time.Second, fmt.Sprintf("mallory to hold %d presence consumers", perIdentity), func() bool { return held() == perIdentity })
	t.Logf("mallory tried %d presence consumers (%d refused at the bucket's cap of %d) and holds %d", tries, refused, bucketCap, held())

	t.Run("one log line names the agent", func(t *testing.T) {
		if lines := strings.Count(logs.String(), "limits.watches_per_identity"); lines != 1 || !strings.Contains(logs.String(), "agent=mallory") {
			t.Fatalf("%d log lines about the watch cap; want one naming mallory:\n%.3000s", lines, logs)
		}
	})
	t.Run("a new agent's presence watch works", func(t *testing.T) {
		late := newPeer(t, m, mint(t, m, "late", provisioner.ProfileAgent, grants))
		kv, err := late.jetStream(t).KeyValue(ctx, n.PresenceBucket())
		if err != nil {
			t.Fatal(late.explain(err))
		}
		w, err := kv.WatchAll(ctx)
		if err != nil {
			t.Fatalf("a new agent's presence watch: %v", late.explain(err))
		}
		_ = w.Stop()
	})
	t.Run("a stored DM carries no detail of its sender's connection", func(t *testing.T) {
		bob := mint(t, m, "bob", provisioner.ProfileAgent, grants)
		if _, err := p.jetStream(t).Publish(ctx, n.InstSubject(bob.ID, mallory.ID), envelope(t, mallory, "", "hi")); err != nil {
			t.Fatal(p.explain(err))
		}
		bp := newPeer(t, m, bob)
		cons, err := bp.jetStream(t).Consumer(ctx, n.DMStream(), n.DMConsumer(bob.ID))
		if err != nil {
			t.Fatal(bp.explain(err))
		}
		msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatal(bp.explain(err))
		}
		if info := msg.Headers().Get("Nats-Request-Info"); strings.Contains(info, mallory.ID) || strings.Contains(info, `"jwt"`) {
			t.Fatalf("the stored DM carries its sender's connection details: %s", info)
		}
	})
}

// TestARestartedClientKeepsItsLiveWatch: a client that restarts leaves its old presence
// watches behind unread until they go idle. Past limits.watches_per_identity the cap deletes
// those, not the watch the client reads now, which goes on seeing the roster change.
func TestARestartedClientKeepsItsLiveWatch(t *testing.T) {
	t.Parallel()
	const perIdentity = 3
	m := spacetest.New(t, func(o *space.Options) { o.Limits.WatchesPerIdentity = perIdentity })
	n := wire.NewNames("main")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	grants := provisioner.Grants{Subscribe: []string{"general"}}
	aliceCred := mint(t, m, "alice", provisioner.ProfileAgent, grants)
	watch := func(p *peer, opts ...jetstream.WatchOpt) jetstream.KeyWatcher {
		kv, err := p.jetStream(t).KeyValue(ctx, n.PresenceBucket())
		if err != nil {
			t.Fatal(p.explain(err))
		}
		w, err := kv.WatchAll(ctx, opts...)
		if err != nil {
			t.Fatal(p.explain(err))
		}
		return w
	}
	// Each earlier incarnation dies without stopping its watch, which the broker keeps until
	// it has been idle for its inactive threshold.
	for range perIdentity + 2 {
		old := newPeer(t, m, aliceCred)
		watch(old)
		old.nc.Close()
	}
	alice := newPeer(t, m, aliceCred)
	live := watch(alice, jetstream.UpdatesOnly())
	defer live.Stop()
	stream, err := alice.jetStream(t).Stream(ctx, wire.KVStream(n.PresenceBucket()))
	if err != nil {
		t.Fatal(alice.explain(err))
	}
	await.True(t, 10*time.Second, fmt.Sprintf("alice's watches cut to %d", perIdentity), func() bool {
		info, err := stream.Info(ctx)
		return err == nil && info.State.Consumers <= perIdentity
	})
	bob := newPeer(t, m, mint(t, m, "bob", provisioner.ProfileAgent, grants))
	if err := store(n.PresenceKVSubject(bob.cred.ID), "", nil)(ctx, t, bob); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case e := <-live.Updates():
			if e != nil && e.Key() == bob.cred.ID {
				return
			}
		case <-ctx.Done():
			t.Fatal("alice's live watch never saw bob arrive: the cap deleted it")
		}
	}
}
