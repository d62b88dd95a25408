package endpoint_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// meshReader mints a credential of profile (an agent one with spec's grants) and connects a
// passive Endpoint with it, closed at cleanup. An agent credential reads passively only when
// asked to (Options.Passive); observer and admin ones always do.
func meshReader(t *testing.T, m *space.Mesh, profile string, spec admin.MintSpec, configure ...func(*endpoint.Options)) *peer {
	t.Helper()
	spec.Space, spec.Profile, spec.NoExpiry = "main", profile, true
	cred, err := admin.Mint(ctxT(t), m, spec)
	if err != nil {
		t.Fatalf("mint %s %s: %v", profile, spec.Name, err)
	}
	return meshConnect(t, m, cred, append([]func(*endpoint.Options){func(o *endpoint.Options) {
		o.Passive, o.Kind = true, wire.CardKindEndpoint
	}}, configure...)...)
}

// readSpec is the mint spec of a reader: an agent reads acl, an observer or admin
// takes no grants (SPEC Appendix B).
func readSpec(name, profile string, acl []string) admin.MintSpec {
	spec := admin.MintSpec{Name: name}
	if profile == "agent" {
		spec.AllowSubscribe = acl
	}
	return spec
}

// sendN sends n messages on channel and returns their ids in order.
func sendN(t *testing.T, from *peer, channel string, n int) []string {
	t.Helper()
	return sendEach(t, from.Send, channel, channel, n)
}

// sendTasks sends n anycasts to role, numbered after prefix, and returns their ids in order.
func sendTasks(t *testing.T, from *peer, role, prefix string, n int) []string {
	t.Helper()
	return sendEach(t, from.SendAnycast, role, prefix, n)
}

// sendEach sends n texts numbered after prefix to `to` with send, one at a time, and returns
// their ids in order.
func sendEach(t *testing.T, send func(context.Context, string, []wire.Part, ...endpoint.SendOption) (endpoint.Receipt, error),
	to, prefix string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		r, err := send(ctxT(t), to, text(fmt.Sprintf("%s %d", prefix, i)))
		if err != nil {
			t.Fatalf("send to %s: %v", to, err)
		}
		ids[i] = r.ID
	}
	return ids
}

func TestHistoryReturnsTheLastMessagesOldestFirstForEveryProfile(t *testing.T) {
	m := spacetest.New(t)
	general := []string{"general"}
	alice := meshAgent(t, m, admin.MintSpec{Name: "alice", AllowSubscribe: general, AllowPublish: general})
	ids := sendN(t, alice, "general", 5)
	readers := []struct {
		name   string
		reader *peer
	}{
		{"an agent within its read ACL, passive", meshReader(t, m, "agent", admin.MintSpec{Name: "carol", AllowSubscribe: general})},
		{"an observer", meshReader(t, m, "observer", admin.MintSpec{Name: "obs"})},
		{"an admin", meshReader(t, m, "admin", admin.MintSpec{Name: "adm"})},
		{"the sender itself, own messages included", alice},
	}
	for _, tt := range readers {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.reader.History(ctxT(t), "general", 3)
			if err != nil {
				t.Fatalf("history: %v", err)
			}
			if len(got) != 3 {
				t.Fatalf("history returned %d messages, want the last 3", len(got))
			}
			for i, d := range got {
				if d.Message.ID != ids[2+i] || !d.Meta.Historical || d.Meta.Kind != endpoint.MetaChannel ||
					d.Meta.Channel != "general" || (i > 0 && d.Meta.Seq <= got[i-1].Meta.Seq) {
					t.Fatalf("message %d: %+v %+v, want %s, historical, in stream order", i, d.Message, d.Meta, ids[2+i])
				}
			}
		})
	}
	t.Run("a limit above what is retained returns everything", func(t *testing.T) {
		got, err := readers[1].reader.History(ctxT(t), ">", 100)
		if err != nil || len(got) != len(ids) {
			t.Fatalf("history of every channel: %d messages, %v; want %d", len(got), err, len(ids))
		}
	})
}

func TestHistoryOutsideTheReadACLIsRefusedAtOnce(t *testing.T) {
	m := spacetest.New(t)
	alice := meshAgent(t, m, admin.MintSpec{Name: "alice", AllowPublish: []string{"secret"}})
	sendN(t, alice, "secret", 1)
	bob := meshReader(t, m, "agent", admin.MintSpec{Name: "bob", AllowSubscribe: []string{"team"}})
	tests := []struct {
		name    string
		channel string
		limit   int
		want    error
	}{
		{"a channel outside the ACL is refused by the broker", "secret", 10, endpoint.ErrReadRefused},
		{"a limit below one is no read", "team", 0, endpoint.ErrInvalidRead},
		{"a channel that is no channel is no read", "a..b", 10, endpoint.ErrInvalidRead},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := bob.History(ctxT(t), tt.channel, tt.limit)
			if !errors.Is(err, tt.want) {
				t.Fatalf("history: %v, want %v", err, tt.want)
			}
			if d := time.Since(start); d > endpoint.DefaultControlTimeout {
				t.Fatalf("the refusal took %v: it ran into a timeout instead of ending at the broker's answer", d)
			}
		})
	}
}

func TestChannelsListsCountsAndEffectiveConfig(t *testing.T) {
	m := spacetest.New(t)
	chans := []string{"general", "random"}
	alice := meshAgent(t, m, admin.MintSpec{Name: "alice", AllowSubscribe: chans, AllowPublish: chans})
	sendN(t, alice, "general", 3)
	sendN(t, alice, "random", 1)
	live, desc, week := wire.DeliveryLive, "announcements", "7d"
	if _, err := m.SetChannel(ctxT(t), "main", space.ChannelUpdate{Channel: "alerts", DeliveryClass: &live,
		Description: &desc, Create: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.SetChannelDefaults(ctxT(t), "main", space.ChannelUpdate{ReplayWindow: &week}); err != nil {
		t.Fatal(err)
	}
	want := []endpoint.ChannelInfo{
		{Name: "alerts", Messages: 0, Class: wire.DeliveryLive, Replay: true, ReplayWindow: 7 * 24 * time.Hour},
		{Name: "general", Messages: 3, Class: wire.DeliveryDurable, Replay: true, ReplayWindow: 7 * 24 * time.Hour},
		{Name: "random", Messages: 1, Class: wire.DeliveryDurable, Replay: true, ReplayWindow: 7 * 24 * time.Hour},
	}
	for _, profile := range []string{"agent", "observer", "admin"} {
		t.Run("an "+profile+" sees every channel with its count and effective config", func(t *testing.T) {
			r := meshReader(t, m, profile, admin.MintSpec{Name: "reader-" + profile})
			list, err := r.Channels(ctxT(t))
			if err != nil {
				t.Fatalf("channels: %v", err)
			}
			if list.Defaults == nil || list.Defaults.ReplayWindow != week {
				t.Fatalf("defaults %+v, want the 7d window", list.Defaults)
			}
			if len(list.Channels) != len(want) {
				t.Fatalf("channels %+v, want %d", list.Channels, len(want))
			}
			for i, w := range want {
				got := list.Channels[i]
				if got.Name != w.Name || got.Messages != w.Messages || got.Class != w.Class || got.Replay != w.Replay ||
					got.ReplayWindow != w.ReplayWindow {
					t.Fatalf("channel %d: %+v, want %+v", i, got, w)
				}
			}
			if c, ok := list.Channel("alerts"); !ok || c.Config == nil || c.Config.Description != desc {
				t.Fatalf("alerts %+v, %v: want its registry entry with the description", c, ok)
			}
		})
	}
}

// tap collects what Follow hands over.
type tap struct {
	mu  sync.Mutex
	got []endpoint.Delivery
}

func (c *tap) add(d endpoint.Delivery) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, d)
}

func (c *tap) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.got)
}

func (c *tap) withID(id string) []endpoint.Delivery {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []endpoint.Delivery
	for _, d := range c.got {
		if d.Message.ID == id {
			out = append(out, d)
		}
	}
	return out
}

func TestFollowTapsLiveTrafficWithinTheGrants(t *testing.T) {
	m := spacetest.New(t)
	chans := []string{"general", "team"}
	alice := meshAgent(t, m, admin.MintSpec{Name: "alice", AllowSubscribe: chans, AllowPublish: chans})
	bob := meshAgent(t, m, admin.MintSpec{Name: "bob", AllowSubscribe: chans, AllowPublish: chans})
	tests := []struct {
		name    string
		profile string
		opts    endpoint.FollowOptions
		dms     bool
	}{
		{"an observer follows every channel", "observer", endpoint.FollowOptions{}, false},
		{"an admin follows every channel and every DM", "admin", endpoint.FollowOptions{Unicast: true}, true},
		{"an agent follows the channels of its read ACL", "agent", endpoint.FollowOptions{}, false},
		{"a named channel is followed alone", "observer", endpoint.FollowOptions{Channels: []string{"general"}}, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := meshReader(t, m, tt.profile, readSpec(fmt.Sprintf("tap%d", i), tt.profile, chans))
			select { // the roster's watch subscribes on its own goroutine
			case <-r.Roster().Loaded():
			case <-ctxT(t).Done():
				t.Fatal("the roster never loaded")
			}
			var c tap
			ctx, cancel := context.WithCancel(ctxT(t))
			defer cancel()
			if err := r.Follow(ctx, tt.opts, c.add); err != nil {
				t.Fatalf("follow: %v", err)
			}
			general, err := alice.Send(ctxT(t), "general", text("live on general"))
			if err != nil {
				t.Fatal(err)
			}
			await.True(t, settle, "the live copy", func() bool { return len(c.withID(general.ID)) == 1 })
			if d := c.withID(general.ID)[0]; d.Meta.Kind != endpoint.MetaChannel || d.Meta.Channel != "general" || d.Meta.Historical {
				t.Fatalf("live copy meta %+v", d.Meta)
			}
			dm, err := alice.SendDM(ctxT(t), bob.ID(), text("a direct word"))
			if err != nil {
				t.Fatal(err)
			}
			if tt.dms {
				await.True(t, settle, "the DM", func() bool { return len(c.withID(dm.ID)) == 1 })
				if d := c.withID(dm.ID)[0]; d.Meta.Kind != endpoint.MetaDM {
					t.Fatalf("DM meta %+v", d.Meta)
				}
			}
			team, err := alice.Send(ctxT(t), "team", text("live on team"))
			if err != nil {
				t.Fatal(err)
			}
			if len(tt.opts.Channels) == 0 {
				await.True(t, settle, "the team copy", func() bool { return len(c.withID(team.ID)) == 1 })
			}
			if !tt.dms && len(c.withID(dm.ID)) != 0 {
				t.Fatal("a DM reached a follow without Unicast")
			}
			before := endpoint.Conn(r.Endpoint).NumSubscriptions()
			cancel()
			await.True(t, settle, "the follow's subscriptions to end", func() bool { return endpoint.Conn(r.Endpoint).NumSubscriptions() < before })
		})
	}
}

func TestFollowOutsideTheGrantsIsRefused(t *testing.T) {
	m := spacetest.New(t)
	tests := []struct {
		name    string
		profile string
		opts    endpoint.FollowOptions
	}{
		{"an observer may not follow DMs", "observer", endpoint.FollowOptions{Unicast: true}},
		{"an agent may not follow a channel outside its read ACL", "agent", endpoint.FollowOptions{Channels: []string{"secret"}}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := meshReader(t, m, tt.profile, readSpec(fmt.Sprintf("tap%d", i), tt.profile, []string{"team"}))
			select { // the roster's watch subscribes on its own goroutine
			case <-r.Roster().Loaded():
			case <-ctxT(t).Done():
				t.Fatal("the roster never loaded")
			}
			before := endpoint.Conn(r.Endpoint).NumSubscriptions()
			err := r.Follow(ctxT(t), tt.opts, func(endpoint.Delivery) {})
			if !errors.Is(err, endpoint.ErrReadRefused) {
				t.Fatalf("follow: %v, want ErrReadRefused", err)
			}
			if after := endpoint.Conn(r.Endpoint).NumSubscriptions(); after != before {
				t.Fatalf("a refused follow left %d subscriptions behind", after-before)
			}
		})
	}
}

// A passive agent Endpoint reads with the agent's credential and takes nothing the agent is
// owed: it is not in the roster, and the DM waiting for the agent stays for the agent.
func TestAPassiveAgentReadsWithoutTakingPart(t *testing.T) {
	m := spacetest.New(t)
	general := []string{"general"}
	cred := meshMint(t, m, admin.MintSpec{Name: "alice", AllowSubscribe: general, AllowPublish: general})
	reader := meshConnect(t, m, cred, func(o *endpoint.Options) { o.Passive = true })
	bob := meshAgent(t, m, admin.MintSpec{Name: "bob", AllowSubscribe: general, AllowPublish: general})
	select {
	case <-bob.Roster().Loaded():
	case <-ctxT(t).Done():
		t.Fatal("bob's roster never loaded")
	}
	if _, ok := bob.Roster().Peer(reader.ID()); ok {
		t.Fatal("the passive reader, connected before bob, is in bob's roster")
	}
	if err := reader.SetStatus(ctxT(t), wire.StatusWorking, "x"); !errors.Is(err, endpoint.ErrPassive) {
		t.Fatalf("SetStatus on a passive agent: %v, want ErrPassive", err)
	}
	dm, err := bob.SendDM(ctxT(t), cred.ID, text("for the agent, not its reader"))
	if err != nil {
		t.Fatal(err)
	}
	alice := meshConnect(t, m, cred)
	await.True(t, settle, "the DM at the agent", func() bool { return len(alice.rec.withID(dm.ID)) == 1 })
	if got := reader.rec.withID(dm.ID); len(got) != 0 {
		t.Fatalf("the passive reader received the agent's DM: %+v", got)
	}
}

func TestRosterMarksADeletedKeyRemovedUntilTheNextRow(t *testing.T) {
	h := newHarness(t)
	alice := h.connect("alice", func(o *endpoint.Options) { o.Heartbeat = wire.DefaultHeartbeat })
	bob := h.connect("bob")
	await.True(t, settle, "alice online", func() bool { p, ok := bob.Roster().Peer(alice.ID()); return ok && p.Online && !p.Removed })
	if err := h.kv(h.names.PresenceBucket()).Delete(ctxT(t), alice.ID()); err != nil {
		t.Fatal(err)
	}
	await.True(t, settle, "alice removed", func() bool { p, ok := bob.Roster().Peer(alice.ID()); return ok && !p.Online && p.Removed })
	if err := alice.SetStatus(ctxT(t), wire.StatusWorking, "back"); err != nil {
		t.Fatal(err)
	}
	await.True(t, settle, "alice back", func() bool { p, ok := bob.Roster().Peer(alice.ID()); return ok && p.Online && !p.Removed })
}

func TestFollowReportsACopyThatFailsTheChecks(t *testing.T) {
	h := newHarness(t)
	rejected := make(chan endpoint.Event, 8)
	r := h.connect("reader", func(o *endpoint.Options) {
		o.Passive = true
		o.OnEvent = func(ev endpoint.Event) {
			if ev.Kind == endpoint.EventRejected {
				rejected <- ev
			}
		}
	})
	var c tap
	if err := r.Follow(ctxT(t), endpoint.FollowOptions{Channels: []string{"general"}}, c.add); err != nil {
		t.Fatal(err)
	}
	subject := h.names.ChatSubject(newID(t), "general")
	h.publishRaw(subject, []byte("not json"))
	select {
	case ev := <-rejected:
		if ev.Subject != subject || ev.Err == nil {
			t.Fatalf("rejected event %+v, want the subject and why", ev)
		}
	case <-ctxT(t).Done():
		t.Fatal("no rejected event for a malformed copy")
	}
	if c.count() != 0 {
		t.Fatal("a malformed copy reached the follower")
	}
}
