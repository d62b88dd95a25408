package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
)

func TestMCPToolErrorsAreResultsThatSayWhatToDo(t *testing.T) {
	m := spacetest.New(t)
	general := []string{"general"}
	alice := newAgent(t, m, "alice", provisioner.Grants{Subscribe: general, AllowPublish: general})
	newAgent(t, m, "carol", provisioner.Grants{Subscribe: general})
	newAgent(t, m, "carol", provisioner.Grants{Subscribe: general})
	await.True(t, callWait, "alice sees both carols", func() bool {
		n := 0
		for _, p := range alice.e.Roster().Snapshot() {
			if p.Presence.Card.Name == "carol" && p.Online {
				n++
			}
		}
		return n == 2
	})
	for _, tc := range []struct {
		name string
		tool string
		args map[string]any
		want string // in the error text
	}{
		{"a DM to a name nobody has names it as unknown", "cotal_dm", map[string]any{"to": "zed", "text": "hi"}, `unknown name: no agent named "zed"`},
		{"a DM to a name two agents share is ambiguous and asks for an id", "cotal_dm", map[string]any{"to": "carol", "text": "hi"}, "ambiguous name"},
		{"a DM without text says to write one", "cotal_dm", map[string]any{"to": "carol", "text": " "}, "text is empty"},
		{"a post outside allowPublish says which credential to ask for", "cotal_send", map[string]any{"channel": "secret", "text": "hi"}, "may not post"},
		{"a post on a pattern asks for a concrete channel", "cotal_send", map[string]any{"channel": "team.*", "text": "hi"}, "concrete channel"},
		{"a post without its required text is refused by the schema", "cotal_send", map[string]any{"channel": "general"}, "text"},
		{"an anycast to a role that is no routing token says what a role is", "cotal_anycast", map[string]any{"role": "a b", "text": "x"}, "letters, digits"},
		{"a join outside the read ACL says the mesh refused it", "cotal_join", map[string]any{"channel": "secret"}, "outside your credential's read ACL"},
		{"a leave of a channel not joined says so", "cotal_leave", map[string]any{"channel": "random"}, "you have not joined"},
		{"history outside the read ACL says the mesh refused it", "cotal_history", map[string]any{"channel": "secret"}, "outside your credential's read ACL"},
		{"history with a negative limit says what to pass", "cotal_history", map[string]any{"channel": "general", "limit": -1}, "positive number"},
		{"a status that SPEC §6 does not know lists the valid ones", "cotal_status", map[string]any{"status": "sleeping"}, "idle, waiting or working"},
		{"info on a channel nobody used names it as unknown", "cotal_channel_info", map[string]any{"channel": "nowhere"}, "unknown channel"},
		{"a negative wait says what to pass", "cotal_inbox", map[string]any{"wait_seconds": -1}, "positive number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := alice.call(t, tc.tool, tc.args)
			if !res.IsError || !strings.Contains(text(res), tc.want) {
				t.Errorf("isError %v, text %q; want an error result containing %q", res.IsError, text(res), tc.want)
			}
		})
	}
	t.Run("the server keeps serving after every error", func(t *testing.T) {
		alice.ok(t, "cotal_send", map[string]any{"text": "still here"}, nil)
	})
}

func TestMCPAnUnreachableMeshIsAnErrorResultThatSaysToRetry(t *testing.T) {
	m, err := space.Start(context.Background(), space.Options{Memory: true})
	if err != nil {
		t.Fatal(err)
	}
	alice := newAgent(t, m, "alice", provisioner.Grants{Subscribe: []string{"general"}, AllowPublish: []string{"general"}})
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for tool, args := range map[string]map[string]any{
		"cotal_send":     {"text": "anyone?"},
		"cotal_channels": {},
		"cotal_history":  {"channel": "general"},
	} {
		t.Run(tool+" says the mesh did not answer", func(t *testing.T) {
			res := alice.call(t, tool, args)
			if !res.IsError || !strings.Contains(text(res), "try again") {
				t.Errorf("isError %v, text %q; want an error result that says to try again", res.IsError, text(res))
			}
		})
	}
}
