package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/cli/mcpserver"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
)

// callWait bounds one tool call in the tests; waiting is done by the tools themselves.
const callWait = 30 * time.Second

// agent is one MCP client driving a Server over the SDK's in-memory transport, joined to a
// real mesh as an agent of its own.
type agent struct {
	name    string
	e       *endpoint.Endpoint
	cs      *mcp.ClientSession
	updates chan string // URIs of resource-updated notifications
}

// newAgent mints an agent credential with grants on m, connects its Endpoint with the inbox
// as Handler, and connects an MCP client to the server in memory.
func newAgent(t testing.TB, m *space.Mesh, name string, grants provisioner.Grants) *agent {
	t.Helper()
	return newAgentWith(t, m, space.AgentSpec{Name: name, Grants: grants}, 0)
}

// newAgentWith is newAgent for any credential spec (a profile other than agent, say) and an
// inbox holding inboxSize messages (mcpserver.DefaultInboxSize if 0).
func newAgentWith(t testing.TB, m *space.Mesh, spec space.AgentSpec, inboxSize int) *agent {
	t.Helper()
	name, grants := spec.Name, spec.Grants
	ctx, cancel := context.WithTimeout(context.Background(), callWait)
	defer cancel()
	inbox := mcpserver.NewInbox(inboxSize)
	spec.Endpoint = endpoint.Options{Channels: grants.Subscribe, Handler: inbox.Handle}
	e, err := m.Endpoint(ctx, spec)
	if err != nil {
		t.Fatalf("connect %s: %v", name, err)
	}
	return serve(t, name, e, inbox, grants)
}

// newRemoteAgent is newAgent over m's TCP listener, connected as cotal mcp connects: a join
// link, a minted credential, and reconnects without a bound, so that the agent outlives an
// outage of the mesh.
func newRemoteAgent(t testing.TB, m *space.Mesh, name string, grants provisioner.Grants) *agent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callWait)
	defer cancel()
	link, err := m.Link("main")
	if err != nil {
		t.Fatal(err)
	}
	cred, err := m.Mint(ctx, provisioner.MintRequest{Space: "main", Name: name, Profile: provisioner.ProfileAgent,
		Grants: grants})
	if err != nil {
		t.Fatalf("mint %s: %v", name, err)
	}
	creds, err := cred.Creds()
	if err != nil {
		t.Fatal(err)
	}
	inbox := mcpserver.NewInbox(0)
	e, err := endpoint.Connect(ctx, endpoint.Options{Link: link, Creds: creds, Channels: grants.Subscribe,
		Handler: inbox.Handle, ReconnectForever: true, ReconnectWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("connect %s: %v", name, err)
	}
	t.Cleanup(func() {
		// The mesh may be gone: the final offline write is given a moment, not waited for.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = e.Close(ctx)
	})
	return serve(t, name, e, inbox, grants)
}

// serve starts a Server on e and inbox and connects an MCP client to it in memory.
func serve(t testing.TB, name string, e *endpoint.Endpoint, inbox *mcpserver.Inbox, grants provisioner.Grants) *agent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callWait)
	defer cancel()
	opts := mcpserver.Options{}
	if len(grants.Subscribe) > 0 {
		opts.DefaultChannel = grants.Subscribe[0]
	}
	srv := mcpserver.NewServer(e, inbox, opts)
	t.Cleanup(srv.Close)
	a := &agent{name: name, e: e, updates: make(chan string, 64)}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatalf("serve %s: %v", name, err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test-" + name, Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case a.updates <- r.Params.URI:
			default:
			}
		}})
	if a.cs, err = client.Connect(ctx, ct, nil); err != nil {
		t.Fatalf("client of %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = a.cs.Close()
		_ = ss.Wait()
	})
	return a
}

// call calls tool with args and returns the raw result; a protocol error fails the test.
func (a *agent) call(t testing.TB, tool string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callWait)
	defer cancel()
	res, err := a.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s calls %s: protocol error %v", a.name, tool, err)
	}
	return res
}

// ok calls tool, fails the test on an error result and decodes the structured result into out.
func (a *agent) ok(t testing.TB, tool string, args, out any) {
	t.Helper()
	res := a.call(t, tool, args)
	if res.IsError {
		t.Fatalf("%s calls %s %v: error result %q", a.name, tool, args, text(res))
	}
	if out == nil {
		return
	}
	data, err := json.Marshal(res.StructuredContent)
	if err == nil {
		err = json.Unmarshal(data, out)
	}
	if err != nil {
		t.Fatalf("%s: decode the result of %s: %v", a.name, tool, err)
	}
}

// text is a result's text content.
func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

type inbox struct {
	Messages []mcpserver.InboxMessage `json:"messages"`
	Dropped  int                      `json:"dropped"`
	Deferred int                      `json:"deferred"`
}

// waitMessage reads the inbox, waiting in the tool, until a message matches or the deadline
// passes; it returns the match and every message read on the way.
func (a *agent) waitMessage(t testing.TB, match func(mcpserver.InboxMessage) bool) (mcpserver.InboxMessage, []mcpserver.InboxMessage) {
	t.Helper()
	var seen []mcpserver.InboxMessage
	deadline := time.Now().Add(callWait)
	for time.Now().Before(deadline) {
		var in inbox
		a.ok(t, "cotal_inbox", map[string]any{"wait_seconds": 5}, &in)
		for _, m := range in.Messages {
			seen = append(seen, m)
			if match(m) {
				return m, seen
			}
		}
	}
	t.Fatalf("%s: no matching message in the inbox within %v; read %+v", a.name, callWait, seen)
	return mcpserver.InboxMessage{}, nil
}
