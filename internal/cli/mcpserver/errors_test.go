package mcpserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

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
	// dave may post on general but reads no channel, so he has no default channel.
	dave := newAgent(t, m, "dave", provisioner.Grants{AllowPublish: general})
	// An observer credential holds no application publish grant (SPEC Appendix B).
	olga := newAgentWith(t, m, space.AgentSpec{Name: "olga", Profile: provisioner.ProfileObserver}, 0)
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
		who  *agent // default alice
		tool string
		args map[string]any
		want string // in the error text
	}{
		{"a DM to a name nobody has names it as unknown", nil, "cotal_dm", map[string]any{"to": "zed", "text": "hi"}, `unknown name: no agent was minted with the name "zed"`},
		{"a DM to a name two agents share is ambiguous and asks for an id", nil, "cotal_dm", map[string]any{"to": "carol", "text": "hi"}, "ambiguous name"},
		{"a DM without text says to write one", nil, "cotal_dm", map[string]any{"to": "carol", "text": " "}, "text is empty"},
		{"a DM with an empty to says whom to name", nil, "cotal_dm", map[string]any{"to": " ", "text": "hi"}, "to is empty; name the agent"},
		{"a DM the mesh refuses says which credential to ask for", olga, "cotal_dm", map[string]any{"to": alice.e.ID(), "text": "hi"},
			"may not send direct messages; ask whoever runs the mesh for an agent credential"},
		{"a post outside allowPublish says which credential to ask for", nil, "cotal_send", map[string]any{"channel": "secret", "text": "hi"}, "may not post"},
		{"a post on a pattern asks for a concrete channel", nil, "cotal_send", map[string]any{"channel": "team.*", "text": "hi"}, "concrete channel"},
		{"a post without its required text is refused by the schema", nil, "cotal_send", map[string]any{"channel": "general"}, "text"},
		{"a post without a channel by an agent with no default says to pass one", dave, "cotal_send", map[string]any{"text": "hi"},
			"no channel to post on: pass channel"},
		{"an anycast to a role that is no routing token says what a role is", nil, "cotal_anycast", map[string]any{"role": "a b", "text": "x"}, "letters, digits"},
		{"an anycast without text says to write the task", nil, "cotal_anycast", map[string]any{"role": "reviewer", "text": ""}, "text is empty; put the task in text"},
		{"an anycast the mesh refuses says which credential to ask for", olga, "cotal_anycast", map[string]any{"role": "reviewer", "text": "x"},
			"may not send tasks to roles; ask whoever runs the mesh for an agent credential"},
		{"a join outside the read ACL says the mesh refused it", nil, "cotal_join", map[string]any{"channel": "secret"}, "outside your credential's read ACL"},
		{"a join of a pattern asks for a concrete channel", nil, "cotal_join", map[string]any{"channel": "team.*"}, "join one concrete channel"},
		{"a join of a malformed name asks for a concrete channel", nil, "cotal_join", map[string]any{"channel": "a..b"}, "join one concrete channel"},
		{"a leave of a channel not joined says so", nil, "cotal_leave", map[string]any{"channel": "random"}, "you have not joined"},
		{"history outside the read ACL says the mesh refused it", nil, "cotal_history", map[string]any{"channel": "secret"}, "outside your credential's read ACL"},
		{"history with a negative limit says what to pass", nil, "cotal_history", map[string]any{"channel": "general", "limit": -1}, "positive number"},
		{"a status that SPEC §6 does not know lists the valid ones", nil, "cotal_status", map[string]any{"status": "sleeping"}, "idle, waiting or working"},
		{"info on a channel nobody used names it as unknown", nil, "cotal_channel_info", map[string]any{"channel": "nowhere"}, "unknown channel"},
		{"info on a malformed name asks for a channel such as general", nil, "cotal_channel_info", map[string]any{"channel": "a..b"}, "name a channel such as general"},
		{"info on an empty name asks for a channel such as general", nil, "cotal_channel_info", map[string]any{"channel": ""}, "name a channel such as general"},
		{"a negative wait says what to pass", nil, "cotal_inbox", map[string]any{"wait_seconds": -1}, "positive number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			who := tc.who
			if who == nil {
				who = alice
			}
			res := who.call(t, tc.tool, tc.args)
			if !res.IsError || !strings.Contains(text(res), tc.want) {
				t.Errorf("isError %v, text %q; want an error result containing %q", res.IsError, text(res), tc.want)
			}
		})
	}
	t.Run("the servers keep serving after every error", func(t *testing.T) {
		alice.ok(t, "cotal_send", map[string]any{"text": "still here"}, nil)
		dave.ok(t, "cotal_send", map[string]any{"channel": "general", "text": "still here"}, nil)
		olga.ok(t, "cotal_roster", map[string]any{}, nil)
	})
}

// unreachableCalls are a call of every tool that needs the mesh.
var unreachableCalls = []struct {
	tool string
	args map[string]any
}{
	{"cotal_send", map[string]any{"text": "anyone?"}},
	{"cotal_dm", map[string]any{"to": "bob", "text": "anyone?"}},
	{"cotal_anycast", map[string]any{"role": "reviewer", "text": "anyone?"}},
	{"cotal_roster", map[string]any{}},
	{"cotal_status", map[string]any{"status": "working"}},
	{"cotal_channels", map[string]any{}},
	{"cotal_channel_info", map[string]any{"channel": "general"}},
	{"cotal_join", map[string]any{"channel": "team"}},
	{"cotal_leave", map[string]any{"channel": "general"}},
	{"cotal_history", map[string]any{"channel": "general"}},
}

func TestMCPAnUnreachableMeshIsAnErrorResultThatSaysWhatToDo(t *testing.T) {
	grants := provisioner.Grants{Subscribe: []string{"general"}, AllowSubscribe: []string{"general", "team"},
		AllowPublish: []string{"general"}}
	for _, tc := range []struct {
		name string
		// connect returns an agent on m, which the test then closes.
		connect func(t *testing.T, m *space.Mesh) *agent
		want    string
	}{
		{"while the connection is being re-established, every call says to try again",
			func(t *testing.T, m *space.Mesh) *agent { return newRemoteAgent(t, m, "alice", grants) },
			"the mesh is unreachable: the connection is down and being re-established; the mesh may be restarting: try again in a few seconds"},
		{"once the agent's connection has ended, every call says to restart the server",
			func(t *testing.T, m *space.Mesh) *agent { return newAgent(t, m, "alice", grants) },
			"the agent's connection to the mesh has ended (endpoint is closed); restart the MCP server once the mesh runs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := space.Start(context.Background(), space.Options{Memory: true, Listen: "127.0.0.1:0"})
			if err != nil {
				t.Fatal(err)
			}
			alice := tc.connect(t, m)
			if err := m.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			// A TCP client learns of the close when it reads the end of its connection.
			await.True(t, 10*time.Second, "alice's connection to be down", func() bool { return !alice.e.Connected() })
			for _, c := range unreachableCalls {
				res := alice.call(t, c.tool, c.args)
				if !res.IsError || !strings.Contains(text(res), tc.want) {
					t.Errorf("%s: isError %v, text %q; want an error result containing %q", c.tool, res.IsError, text(res), tc.want)
				}
			}
			// The server keeps serving what needs no mesh.
			alice.ok(t, "cotal_inbox", map[string]any{}, nil)
			alice.ok(t, "cotal_status", map[string]any{}, nil)
		})
	}
}
