package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/cli/mcpserver"
	"github.com/cotal-go/cotal/internal/testlog"
	"github.com/cotal-go/cotal/space/spacetest"
)

// mcpAgent is an MCP client driving a `cotal mcp` process over its stdin and stdout.
type mcpAgent struct {
	name    string
	cs      *mcp.ClientSession
	stderr  *testlog.Buffer
	updates chan string // URIs of resource-updated notifications
}

// mintAgent mints an agent credential on the mesh of dir and returns the file.
func mintAgent(t *testing.T, bin, dir, name string, extra ...string) string {
	t.Helper()
	creds := filepath.Join(dir, name+".creds")
	args := append([]string{"auth", "mint", "--dir", dir, "--profile", "agent", "--name", name,
		"--subscribe", "general", "--allow-publish", "general", "--out", creds}, extra...)
	if _, stderr, code := runCotal(t, bin, args...); code != 0 {
		t.Fatalf("mint %s: exit %d: %s", name, code, stderr)
	}
	return creds
}

// startMCP runs `cotal mcp` as an agent runtime does and connects an MCP client to it.
func startMCP(t *testing.T, bin, link, creds, name string) *mcpAgent {
	t.Helper()
	a := &mcpAgent{name: name, stderr: &testlog.Buffer{}, updates: make(chan string, 64)}
	cmd := exec.Command(bin, "mcp", "--link", link, "--creds", creds)
	cmd.Stderr = a.stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-" + name, Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case a.updates <- r.Params.URI:
			default:
			}
		}})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to cotal mcp as %s: %v; stderr:\n%s", name, err, a.stderr)
	}
	a.cs = cs
	t.Cleanup(func() {
		if err := cs.Close(); err != nil {
			t.Errorf("cotal mcp of %s did not end cleanly when its stdin closed: %v; stderr:\n%s", name, err, a.stderr)
		}
	})
	return a
}

// ok calls tool and decodes its structured result into out; an error result fails the test.
func (a *mcpAgent) ok(t *testing.T, tool string, args map[string]any, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := a.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s calls %s: %v; stderr:\n%s", a.name, tool, err, a.stderr)
	}
	if res.IsError {
		t.Fatalf("%s calls %s: error result %+v", a.name, tool, res.Content)
	}
	if out != nil {
		data, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s: decode %s: %v", a.name, tool, err)
		}
	}
}

type mcpInboxMessage struct {
	Kind, Channel, From, Text string
}

// waitText reads the inbox, waiting in the tool, until a message with text arrives.
func (a *mcpAgent) waitText(t *testing.T, text string) mcpInboxMessage {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		var in struct{ Messages []mcpInboxMessage }
		a.ok(t, "cotal_inbox", map[string]any{"wait_seconds": 5}, &in)
		for _, m := range in.Messages {
			if m.Text == text {
				return m
			}
		}
	}
	t.Fatalf("%s: %q never reached the inbox", a.name, text)
	return mcpInboxMessage{}
}

func TestMCPProcessesExchangeMessagesOverStdio(t *testing.T) {
	bin := cotalBin(t)
	dir := t.TempDir()
	up := startUp(t, bin, dir)
	alice := startMCP(t, bin, up.link, mintAgent(t, bin, dir, "alice"), "alice")
	bob := startMCP(t, bin, up.link, mintAgent(t, bin, dir, "bob", "--role", "reviewer"), "bob")

	t.Run("a DM by name goes from one process to the other's inbox", func(t *testing.T) {
		start := time.Now()
		alice.ok(t, "cotal_dm", map[string]any{"to": "bob", "text": "hello bob, over stdio"}, nil)
		m := bob.waitText(t, "hello bob, over stdio")
		t.Logf("DM round trip between two cotal mcp processes, cotal_dm call to cotal_inbox result: %v", time.Since(start))
		if m.Kind != "dm" || m.From != "alice" {
			t.Errorf("bob got %+v, want a dm from alice", m)
		}
		var rtts []time.Duration
		for i := range 20 {
			text := fmt.Sprintf("ping %d", i)
			start := time.Now()
			alice.ok(t, "cotal_dm", map[string]any{"to": "bob", "text": text}, nil)
			bob.waitText(t, text)
			rtts = append(rtts, time.Since(start))
		}
		slices.Sort(rtts)
		t.Logf("over 20 more DMs: min %v, median %v, max %v", rtts[0], rtts[len(rtts)/2], rtts[len(rtts)-1])
	})
	t.Run("a post on the default channel reaches the other process", func(t *testing.T) {
		bob.ok(t, "cotal_send", map[string]any{"text": "hello general"}, nil)
		if m := alice.waitText(t, "hello general"); m.Kind != "channel" || m.Channel != "general" {
			t.Errorf("alice got %+v, want a post on general", m)
		}
	})
	t.Run("an anycast reaches the process holding the role", func(t *testing.T) {
		alice.ok(t, "cotal_anycast", map[string]any{"role": "reviewer", "text": "review please"}, nil)
		if m := bob.waitText(t, "review please"); m.Kind != "anycast" {
			t.Errorf("bob got %+v, want an anycast", m)
		}
	})
	t.Run("a client subscribed to the inbox resource is told over stdio when a message arrives", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := bob.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: mcpserver.InboxURI}); err != nil {
			t.Fatalf("subscribe to the inbox: %v", err)
		}
		// As in the in-process test: the server registers the subscription asynchronously, so
		// send until an arrival is announced.
		for notified := false; !notified; {
			alice.ok(t, "cotal_dm", map[string]any{"to": "bob", "text": "wake up"}, nil)
			select {
			case uri := <-bob.updates:
				if uri != mcpserver.InboxURI {
					t.Errorf("notified of %q, want %q", uri, mcpserver.InboxURI)
				}
				notified = true
			case <-time.After(time.Second):
			case <-ctx.Done():
				t.Fatalf("no resource update notification within the deadline; stderr:\n%s", bob.stderr)
			}
		}
		res, err := bob.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcpserver.InboxURI})
		if err != nil || len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, "wake up") {
			t.Fatalf("read the inbox resource: %v, %+v", err, res)
		}
		bob.ok(t, "cotal_inbox", map[string]any{}, nil)
	})
	t.Run("the logs go to standard error, never to the MCP stream", func(t *testing.T) {
		if !strings.Contains(alice.stderr.String(), "serving MCP on stdio") {
			t.Errorf("stderr of alice's process lacks the start log:\n%s", alice.stderr)
		}
	})
}

func TestMCPWithoutACredentialSaysHowToMintOne(t *testing.T) {
	bin := cotalBin(t)
	t.Setenv(envCreds, "")
	_, stderr, code := runCotal(t, bin, "mcp", "--link", "cotal://127.0.0.1:1/main")
	if code != exitError || !strings.Contains(stderr, "cotal auth mint") {
		t.Fatalf("exit %d, stderr %q; want exit 1 saying to mint a credential with `cotal auth mint`", code, stderr)
	}
}

func TestMCPServerRecoversFromAMeshRestart(t *testing.T) {
	bin := cotalBin(t)
	dir := t.TempDir()
	listen := spacetest.FreeAddr(t)
	up := startUp(t, bin, dir, "--listen", listen)
	alice := startMCP(t, bin, up.link, mintAgent(t, bin, dir, "alice"), "alice")
	bob := startMCP(t, bin, up.link, mintAgent(t, bin, dir, "bob"), "bob")
	alice.ok(t, "cotal_dm", map[string]any{"to": "bob", "text": "before the restart"}, nil)
	bob.waitText(t, "before the restart")

	up.stop(t)
	startUp(t, bin, dir, "--listen", listen)

	// Calls made while the servers reconnect are error results that say to try again; one
	// succeeds once the mesh is back.
	await.Check(t, 90*time.Second, 200*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := alice.cs.CallTool(ctx, &mcp.CallToolParams{Name: "cotal_dm",
			Arguments: map[string]any{"to": "bob", "text": "after the restart"}})
		if err != nil {
			t.Fatalf("cotal mcp of alice stopped serving during the restart: %v; stderr:\n%s", err, alice.stderr)
		}
		if res.IsError {
			return fmt.Errorf("cotal_dm still fails after the restart: %+v", res.Content)
		}
		return nil
	})
	bob.waitText(t, "after the restart")
}
