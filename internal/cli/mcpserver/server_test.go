package mcpserver_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/cli/mcpserver"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space/spacetest"
)

func TestMCPTwoAgentsTalkThroughTheirTools(t *testing.T) {
	m := spacetest.New(t)
	general := []string{"general"}
	alice := newAgent(t, m, "alice", provisioner.Grants{Subscribe: general, AllowSubscribe: []string{"general", "team.*"},
		AllowPublish: []string{"general", "team.*"}})
	bob := newAgent(t, m, "bob", provisioner.Grants{Subscribe: general, AllowPublish: general, Role: "reviewer"})

	t.Run("a DM by name reaches the other agent's inbox once, and reading clears it", func(t *testing.T) {
		start := time.Now()
		alice.ok(t, "cotal_dm", map[string]any{"to": "bob", "text": "hi bob"}, nil)
		got, _ := bob.waitMessage(t, func(m mcpserver.InboxMessage) bool { return m.Text == "hi bob" })
		t.Logf("DM round trip, alice's cotal_dm call to bob's cotal_inbox result: %v", time.Since(start))
		if got.Kind != "dm" || got.From != "alice" || got.FromID != alice.e.ID() || got.History {
			t.Errorf("bob got %+v, want a live dm from alice (%s)", got, alice.e.ID())
		}
		var again inbox
		bob.ok(t, "cotal_inbox", map[string]any{}, &again)
		if len(again.Messages) != 0 {
			t.Errorf("a second cotal_inbox returned %+v, want nothing: the first one clears", again.Messages)
		}
	})
	t.Run("a DM by instance id reaches the other agent", func(t *testing.T) {
		bob.ok(t, "cotal_dm", map[string]any{"to": alice.e.ID(), "text": "hi alice"}, nil)
		alice.waitMessage(t, func(m mcpserver.InboxMessage) bool { return m.Kind == "dm" && m.Text == "hi alice" })
	})
	t.Run("a post without a channel goes to the default channel and reaches the other agent", func(t *testing.T) {
		alice.ok(t, "cotal_send", map[string]any{"text": "hello, general", "mentions": []string{"bob"}}, nil)
		got, seen := bob.waitMessage(t, func(m mcpserver.InboxMessage) bool { return m.Text == "hello, general" })
		if got.Kind != "channel" || got.Channel != "general" || !slices.Contains(got.Mentions, "bob") {
			t.Errorf("bob got %+v, want a channel message on general mentioning bob", got)
		}
		// SPEC §4: the live copy and its @mention durable twin are one message.
		var more inbox
		bob.ok(t, "cotal_inbox", map[string]any{"wait_seconds": 1}, &more)
		n := 0
		for _, m := range append(seen, more.Messages...) {
			if m.ID == got.ID {
				n++
			}
		}
		if n != 1 {
			t.Errorf("the post surfaced %d times, want once", n)
		}
	})
	t.Run("an anycast reaches the holder of the role", func(t *testing.T) {
		alice.ok(t, "cotal_anycast", map[string]any{"role": "reviewer", "text": "please review"}, nil)
		got, _ := bob.waitMessage(t, func(m mcpserver.InboxMessage) bool { return m.Text == "please review" })
		if got.Kind != "anycast" {
			t.Errorf("bob got %+v, want an anycast", got)
		}
	})
	t.Run("peek shows the inbox without clearing it", func(t *testing.T) {
		alice.ok(t, "cotal_dm", map[string]any{"to": "bob", "text": "peek at me"}, nil)
		var first, second inbox
		await.True(t, callWait, "the DM shows in a peek", func() bool {
			bob.ok(t, "cotal_inbox", map[string]any{"peek": true, "wait_seconds": 2}, &first)
			return len(first.Messages) > 0
		})
		bob.ok(t, "cotal_inbox", map[string]any{"peek": true}, &second)
		if len(second.Messages) != len(first.Messages) {
			t.Errorf("the second peek shows %d messages, the first %d: peek must not clear", len(second.Messages), len(first.Messages))
		}
		bob.ok(t, "cotal_inbox", map[string]any{}, nil)
	})
	t.Run("a status change shows in the other agent's roster", func(t *testing.T) {
		var st struct{ Status, Activity string }
		bob.ok(t, "cotal_status", map[string]any{"status": "working", "activity": "reviewing PR 12"}, &st)
		if st.Status != "working" || st.Activity != "reviewing PR 12" {
			t.Errorf("cotal_status answered %+v", st)
		}
		await.True(t, callWait, "alice's roster shows bob working", func() bool {
			var r struct {
				Peers []struct{ Name, ID, Role, Status, Activity string }
			}
			alice.ok(t, "cotal_roster", map[string]any{}, &r)
			for _, p := range r.Peers {
				if p.Name == "bob" && p.ID == bob.e.ID() && p.Role == "reviewer" && p.Status == "working" &&
					p.Activity == "reviewing PR 12" {
					return true
				}
			}
			return false
		})
		bob.ok(t, "cotal_status", map[string]any{}, &st)
		if st.Status != "working" {
			t.Errorf("cotal_status without arguments answered %+v, want the current status", st)
		}
	})
	t.Run("history returns the most recent posts, oldest first", func(t *testing.T) {
		for _, s := range []string{"one", "two", "three"} {
			alice.ok(t, "cotal_send", map[string]any{"channel": "general", "text": s}, nil)
		}
		var h struct{ Messages []mcpserver.InboxMessage }
		bob.ok(t, "cotal_history", map[string]any{"channel": "general", "limit": 2}, &h)
		if len(h.Messages) != 2 || h.Messages[0].Text != "two" || h.Messages[1].Text != "three" {
			t.Errorf("history limit 2 gave %+v, want two then three", h.Messages)
		}
	})
	t.Run("channels and channel info show general as joined", func(t *testing.T) {
		var list struct {
			Channels []struct {
				Name     string
				Messages int
				Joined   bool
			}
			Joined []string
		}
		alice.ok(t, "cotal_channels", map[string]any{}, &list)
		i := slices.IndexFunc(list.Channels, func(c struct {
			Name     string
			Messages int
			Joined   bool
		}) bool {
			return c.Name == "general"
		})
		if i < 0 || !list.Channels[i].Joined || list.Channels[i].Messages == 0 || !slices.Contains(list.Joined, "general") {
			t.Errorf("cotal_channels gave %+v, want general joined with messages", list)
		}
		var info struct {
			Name   string
			Class  string
			Joined bool
		}
		alice.ok(t, "cotal_channel_info", map[string]any{"channel": "general"}, &info)
		if info.Name != "general" || !info.Joined || info.Class == "" {
			t.Errorf("cotal_channel_info gave %+v", info)
		}
	})
	t.Run("join and leave change the joined channels", func(t *testing.T) {
		var j struct{ Channel, State string }
		alice.ok(t, "cotal_join", map[string]any{"channel": "team.backend"}, &j)
		if j.Channel != "team.backend" || j.State == "" {
			t.Errorf("cotal_join gave %+v", j)
		}
		var left struct{ Joined []string }
		alice.ok(t, "cotal_leave", map[string]any{"channel": "team.backend"}, &left)
		if slices.Contains(left.Joined, "team.backend") || !slices.Contains(left.Joined, "general") {
			t.Errorf("after leaving, joined is %v", left.Joined)
		}
	})
	t.Run("a subscribed client is told when a message arrives and reads it from the resource", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), callWait)
		defer cancel()
		if err := bob.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: mcpserver.InboxURI}); err != nil {
			t.Fatalf("subscribe to the inbox: %v", err)
		}
		// Under the SDK's current protocol, Subscribe opens a listen stream that the server
		// registers asynchronously, so a message that arrives first is not announced: send
		// until one is (the inbox keeps every copy, so the read below sees them all).
		notified := false
		for !notified {
			alice.ok(t, "cotal_dm", map[string]any{"to": "bob", "text": "wake up"}, nil)
			select {
			case uri := <-bob.updates:
				if uri != mcpserver.InboxURI {
					t.Errorf("notified of %q, want %q", uri, mcpserver.InboxURI)
				}
				notified = true
			case <-time.After(time.Second):
			case <-ctx.Done():
				t.Fatal("no resource update notification within the deadline")
			}
		}
		res, err := bob.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcpserver.InboxURI})
		if err != nil || len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, "wake up") {
			t.Fatalf("read the inbox resource: %v, %+v", err, res)
		}
	})
}

func TestMCPToolInputSchemasRequireOnlyTheRequiredParameters(t *testing.T) {
	m := spacetest.New(t)
	a := newAgent(t, m, "alice", provisioner.Grants{Subscribe: []string{"general"}})
	ctx, cancel := context.WithTimeout(context.Background(), callWait)
	defer cancel()
	tools, err := a.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"cotal_send": {"text"}, "cotal_dm": {"text", "to"}, "cotal_anycast": {"role", "text"},
		"cotal_inbox": nil, "cotal_roster": nil, "cotal_status": nil, "cotal_channels": nil,
		"cotal_channel_info": {"channel"}, "cotal_join": {"channel"}, "cotal_leave": {"channel"},
		"cotal_history": {"channel"}, "cotal_orientation": nil,
	}
	got := map[string][]string{}
	for _, tool := range tools.Tools {
		schema, _ := tool.InputSchema.(map[string]any)
		var req []string
		if r, ok := schema["required"].([]any); ok {
			for _, x := range r {
				req = append(req, x.(string))
			}
		}
		slices.Sort(req)
		got[tool.Name] = req
		if tool.Description == "" {
			t.Errorf("%s has no description", tool.Name)
		}
	}
	for name, req := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("tool %s is missing", name)
		} else if !slices.Equal(g, req) {
			t.Errorf("%s requires %v, want %v", name, g, req)
		}
	}
	if len(got) != len(want) {
		t.Errorf("the server lists %d tools, want %d", len(got), len(want))
	}
}
