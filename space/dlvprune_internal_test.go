package space

import (
	"context"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/wire"
)

// A narrowing re-mint's prune ends at the end of the member's handoff as it found it, even
// while copies for the member keep arriving faster than it reads them one by one: it holds
// the mint lock every other mint waits on. It still deletes the copy the new ACL does not
// cover.
func TestThePruneEndsWhileCopiesKeepArriving(t *testing.T) {
	opts := Options{Memory: true}
	opts.Limits.HandoffPerSubject = 1 << 30 // nothing evicted while the flood runs
	m := startTestMesh(t, opts)
	rt, err := m.runtime("main")
	if err != nil {
		t.Fatal(err)
	}
	bob := testMint(t, m, "bob", provisioner.ProfileAgent, provisioner.Grants{AllowSubscribe: []string{"team", "ops"}})
	js, err := jetstream.New(rt.dlvConn)
	if err != nil {
		t.Fatal(err)
	}
	subject := rt.names.DLVSubject(bob.ID)
	copyOf := func(channel string) []byte {
		b, err := wire.NewChannelMessage("main", wire.EndpointRef{ID: bob.ID, Name: "alice"}, channel,
			wire.TextPart("a copy")).AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	if _, err := js.Publish(ctx, subject, copyOf("ops")); err != nil {
		t.Fatal(err)
	}
	team := copyOf("team")
	stop := make(chan struct{})
	var flood sync.WaitGroup
	flood.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-js.PublishAsyncComplete():
			}
			for range 256 {
				if _, err := js.PublishAsync(subject, team); err != nil {
					t.Error(err)
					return
				}
			}
		}
	})
	deleted, err := rt.pruneHandoff(ctx, bob.ID, wire.ACLRecord{AllowSubscribe: []string{"team"}})
	close(stop)
	flood.Wait()
	if err != nil {
		t.Fatalf("the prune did not end while copies kept arriving: %v", err)
	}
	if deleted != 1 {
		t.Fatalf("the prune deleted %d copies, want the one copy of ops", deleted)
	}
}
