package endpoint_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/wire"
)

func peerOf(r *endpoint.Roster, id string) (endpoint.Peer, bool) { return r.Peer(id) }

func TestRosterShowsPeersWithTheirPresence(t *testing.T) {
	h := newHarness(t)
	alice := h.connect("alice", func(o *endpoint.Options) { o.Role = "planner"; o.Description = "plans" })
	bob := h.connect("bob")

	await.True(t, settle, "alice in bob's roster", func() bool {
		p, ok := peerOf(bob.Roster(), alice.ID())
		return ok && p.Online
	})
	if err := alice.SetStatus(ctxT(t), wire.StatusWorking, "reviewing"); err != nil {
		t.Fatal(err)
	}
	if err := alice.SetAttention(ctxT(t), wire.AttentionFocus, map[string]wire.ChannelMode{"noise": wire.ChannelModeMuted}); err != nil {
		t.Fatal(err)
	}
	await.True(t, settle, "alice's status and attention", func() bool {
		p, _ := peerOf(bob.Roster(), alice.ID())
		return p.Presence.Status == wire.StatusWorking && p.Presence.Activity == "reviewing" &&
			p.Presence.Attention == wire.AttentionFocus && p.Presence.ChannelModes["noise"] == wire.ChannelModeMuted
	})
	p, _ := peerOf(bob.Roster(), alice.ID())
	card := p.Presence.Card
	if card.Name != "alice" || card.Role != "planner" || card.Kind != wire.CardKindAgent ||
		card.ProtocolVersion != wire.ProtocolVersion || card.Description != "plans" {
		t.Errorf("card %+v does not carry alice's identity", card)
	}
	if err := alice.SetStatus(ctxT(t), wire.StatusOffline, ""); err == nil {
		t.Error("a live instance announced offline")
	}
	await.True(t, settle, "a fresh roster", bob.Roster().Fresh)
}

func TestRosterMarksAPeerOfflineAtOnceWhenItsKeyIsDeleted(t *testing.T) {
	h := newHarness(t)
	alice := h.connect("alice", func(o *endpoint.Options) { o.Heartbeat = wire.DefaultHeartbeat })
	bob := h.connect("bob")
	events, cancel := bob.Roster().Subscribe()
	defer cancel()
	await.True(t, settle, "alice online", func() bool { p, ok := peerOf(bob.Roster(), alice.ID()); return ok && p.Online })

	if err := h.kv(h.names.PresenceBucket()).Delete(ctxT(t), alice.ID()); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	for {
		select {
		case ev := <-events:
			if ev.Kind == endpoint.PeerOffline && ev.Peer.Presence.Card.ID == alice.ID() {
				return
			}
		case <-ctx.Done():
			t.Fatal("no offline event after the delete")
		}
	}
}

func TestRosterShowsAClosedPeerOffline(t *testing.T) {
	h := newHarness(t)
	alice := h.connect("alice")
	bob := h.connect("bob")
	await.True(t, settle, "alice online", func() bool { p, ok := peerOf(bob.Roster(), alice.ID()); return ok && p.Online })
	if err := alice.Close(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	await.True(t, settle, "alice's final offline record", func() bool {
		p, ok := peerOf(bob.Roster(), alice.ID())
		return ok && !p.Online && p.Presence.Status == wire.StatusOffline
	})
}

func TestRosterDropsRowsThatAreNotTheirKeysPresence(t *testing.T) {
	h := newHarness(t)
	bob := h.connect("bob")
	mallory := newID(t)
	kv := h.kv(h.names.PresenceBucket())
	rows := map[string]string{
		"a JetStream ack":            `{"stream":"KV_cotal_presence_main","seq":3}`,
		"a card under another key":   `{"card":{"id":"` + bob.ID() + `","name":"bob","kind":"agent"},"status":"idle","ts":1}`,
		"an unknown status":          `{"card":{"id":"` + mallory + `","name":"m","kind":"agent"},"status":"asleep","ts":1}`,
		"a payload that is not json": `not json`,
	}
	for name, row := range rows {
		t.Run(name+" is dropped and counted", func(t *testing.T) {
			before := bob.Stats().PresenceDropped
			if _, err := kv.Put(ctxT(t), mallory, []byte(row)); err != nil {
				t.Fatal(err)
			}
			await.True(t, settle, "the row dropped", func() bool { return bob.Stats().PresenceDropped == before+1 })
		})
	}
	if _, ok := peerOf(bob.Roster(), mallory); ok {
		t.Fatal("an invalid row entered the roster")
	}
}

func TestRosterRecoversAfterItsWatchConsumerIsDeleted(t *testing.T) {
	h := newHarness(t)
	alice := h.connect("alice")
	bob := h.connect("bob")
	await.True(t, settle, "alice online", func() bool { p, ok := peerOf(bob.Roster(), alice.ID()); return ok && p.Online })

	stream, err := h.js.Stream(ctxT(t), wire.KVStream(h.names.PresenceBucket()))
	if err != nil {
		t.Fatal(err)
	}
	deleted := 0
	for name := range stream.ConsumerNames(ctxT(t)).Name() {
		if err := stream.DeleteConsumer(context.Background(), name); err != nil && err != jetstream.ErrConsumerNotFound {
			t.Fatal(err)
		}
		deleted++
	}
	if deleted == 0 {
		t.Fatal("found no watch consumer to delete")
	}
	if err := alice.SetStatus(ctxT(t), wire.StatusWaiting, "after the loss"); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*peer{alice, bob} {
		await.True(t, settle, r.Name()+"'s roster to see alice's new status", func() bool {
			p, _ := peerOf(r.Roster(), alice.ID())
			return p.Presence.Activity == "after the loss"
		})
		await.True(t, settle, "a fresh roster", r.Roster().Fresh)
		if r.Stats().WatchRebuilds == 0 {
			t.Errorf("%s counted no watch rebuild", r.Name())
		}
	}
}
