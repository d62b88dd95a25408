package space_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

func TestPendingReportsWhatWaitsForAnInstance(t *testing.T) {
	m := spacetest.New(t)
	ctx := context.Background()
	alice := mint(t, m, "alice", provisioner.ProfileAgent, provisioner.Grants{Role: "reviewer"})
	bob := mint(t, m, "bob", provisioner.ProfileAgent, provisioner.Grants{})
	mint(t, m, "twin", provisioner.ProfileAgent, provisioner.Grants{})
	// Only an in-process credential may share an active name (provisioner.ErrNameInUse).
	mintWith(t, m, provisioner.MintRequest{Space: "main", Name: "twin", Profile: provisioner.ProfileAgent, InProcessOnly: true})
	js, err := jetstream.New(connect(t, m, bob))
	if err != nil {
		t.Fatal(err)
	}
	n := wire.NewNames("main")
	for _, subject := range []string{n.InstSubject(alice.ID, bob.ID), n.InstSubject(alice.ID, bob.ID), n.SvcSubject("reviewer", bob.ID)} {
		if _, err := js.Publish(ctx, subject, envelope(t, bob, "", "hi")); err != nil {
			t.Fatalf("publish %s: %v", subject, err)
		}
	}

	t.Run("by name it counts the DMs and the role's anycasts", func(t *testing.T) {
		// A consumer counts a stored message as pending a moment after its PubAck.
		await.Check(t, 10*time.Second, await.Interval, func() error {
			b, err := m.Pending(ctx, "main", "Alice")
			if err != nil {
				return err
			}
			if b.ID != alice.ID || b.DM.Pending != 2 || b.DM.Missing || b.Durable.Pending != 0 || b.Anycast == nil || b.Anycast.Pending != 1 {
				return fmt.Errorf("pending = %+v (anycast %+v), want 2 DMs and 1 anycast for alice", b, b.Anycast)
			}
			return nil
		})
	})
	t.Run("by id it finds the same instance", func(t *testing.T) {
		b, err := m.Pending(ctx, "main", alice.ID)
		if err != nil || b.Name != "alice" {
			t.Fatalf("pending by id = %+v, %v", b, err)
		}
	})
	for _, tc := range []struct {
		name, who string
		want      error
	}{
		{"an unknown name is refused", "carol", space.ErrUnknownInstance},
		{"an unknown id is refused", "UDTK2MEYYY33WROIB3F52XDRY3UOQ2FVWDPANSEP4ZM3VXTTO4XW6LZO", space.ErrUnknownInstance},
		{"a name two credentials carry is refused", "twin", space.ErrAmbiguousName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := m.Pending(ctx, "main", tc.who); !errors.Is(err, tc.want) {
				t.Fatalf("Pending(%q) = %v, want %v", tc.who, err, tc.want)
			}
		})
	}
	t.Run("status lists every active agent, the streams and healthy components", func(t *testing.T) {
		st, err := m.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range st.Health {
			if !c.OK {
				t.Errorf("component %s is down: %s", c.Name, c.Error)
			}
		}
		if len(st.Spaces) != 1 || len(st.Spaces[0].Members) != 4 || len(st.Spaces[0].Streams) != 5 {
			t.Fatalf("status = %+v, want one space with 4 members and 5 streams", st.Spaces)
		}
		for _, s := range st.Spaces[0].Streams {
			if s.Name == n.DMStream() && s.Messages != 2 {
				t.Errorf("%s holds %d messages, want 2", s.Name, s.Messages)
			}
		}
	})
}

func TestSetChannel(t *testing.T) {
	m := spacetest.New(t)
	ctx := context.Background()
	alice := mint(t, m, "alice", provisioner.ProfileAgent, provisioner.Grants{AllowPublish: []string{"general"}})
	js, err := jetstream.New(connect(t, m, alice))
	if err != nil {
		t.Fatal(err)
	}
	n := wire.NewNames("main")
	if _, err := js.Publish(ctx, n.ChatSubject(alice.ID, "general"), envelope(t, alice, "general", "hi")); err != nil {
		t.Fatal(err)
	}
	off, live, desc, window, zero := false, wire.DeliveryLive, "team chat", "7d", "0h"

	t.Run("a set keeps the fields it does not name", func(t *testing.T) {
		if _, err := m.SetChannel(ctx, "main", space.ChannelUpdate{Channel: "general", Description: &desc}); err != nil {
			t.Fatal(err)
		}
		c, err := m.SetChannel(ctx, "main", space.ChannelUpdate{Channel: "general", Replay: &off, ReplayWindow: &window})
		if err != nil {
			t.Fatal(err)
		}
		if c.Description != desc || c.Replay == nil || *c.Replay || c.ReplayWindow != window {
			t.Fatalf("config = %+v, want description kept and replay off with window 7d", c)
		}
		kv, _ := js.KeyValue(ctx, n.ChannelsBucket())
		e, err := kv.Get(ctx, "general")
		if err != nil {
			t.Fatal(err)
		}
		got, err := wire.DecodeChannelConfig(e.Value())
		if err != nil || got.Description != desc || got.ReplayWindow != window {
			t.Fatalf("registry holds %s (%v)", e.Value(), err)
		}
	})
	for _, tc := range []struct {
		name string
		u    space.ChannelUpdate
		want error
	}{
		{"a channel with no message and no entry is unknown", space.ChannelUpdate{Channel: "genral", DeliveryClass: &live}, space.ErrUnknownChannel},
		{"an invalid window is refused", space.ChannelUpdate{Channel: "general", ReplayWindow: &zero}, wire.ErrInvalidChannelConfig},
		{"a wildcard channel is refused", space.ChannelUpdate{Channel: "team.>", DeliveryClass: &live}, wire.ErrInvalidChannel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := m.SetChannel(ctx, "main", tc.u); !errors.Is(err, tc.want) {
				t.Fatalf("SetChannel = %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("create configures a channel before its first message", func(t *testing.T) {
		c, err := m.SetChannel(ctx, "main", space.ChannelUpdate{Channel: "alerts", DeliveryClass: &live, Create: true})
		if err != nil || c.DeliveryClass != live {
			t.Fatalf("SetChannel with Create = %+v, %v", c, err)
		}
	})
	t.Run("defaults change only the fields named and keep the class", func(t *testing.T) {
		d, err := m.SetChannelDefaults(ctx, "main", space.ChannelUpdate{ReplayWindow: &window})
		if err != nil || d.ReplayWindow != window || d.DeliveryClass != wire.DeliveryDurable {
			t.Fatalf("defaults = %+v, %v; want window 7d and the durable class written at start", d, err)
		}
	})
	t.Run("defaults refuse a description", func(t *testing.T) {
		_, err := m.SetChannelDefaults(ctx, "main", space.ChannelUpdate{Description: &desc})
		if !errors.Is(err, wire.ErrInvalidChannelConfig) || !strings.Contains(err.Error(), "only replay") {
			t.Fatalf("SetChannelDefaults with a description = %v", err)
		}
	})
}
