package mcpserver_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/internal/cli/launch"
	"github.com/cotal-go/cotal/internal/cli/manager"
	"github.com/cotal-go/cotal/internal/cli/mcpserver"
	"github.com/cotal-go/cotal/internal/cli/supervisor"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

var managerFiles = map[string]string{
	"lead":   "---\nname: lead\nsubscribe: [team.general]\nallowPublish: [team.general]\ncapabilities: [spawn]\n---\nYou lead.\n",
	"worker": "---\nname: worker\nsubscribe: [team.general]\nallowPublish: [team.general]\n---\nYou build.\n",
}

// supervised runs the manager files under a supervisor with the manager service of space main,
// starts name's file, and serves MCP as its runtime would, with the access its credential
// carries.
func supervised(t *testing.T, names ...string) (map[string]*agent, *supervisor.Supervisor, *space.Mesh) {
	t.Helper()
	m := spacetest.New(t, func(o *space.Options) { o.Listen = "127.0.0.1:0" })
	project := t.TempDir()
	agents := filepath.Join(project, ".cotal", "agents")
	if err := os.MkdirAll(agents, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, text := range managerFiles {
		if err := os.WriteFile(filepath.Join(agents, name+".md"), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sup := supervisor.New(supervisor.Options{Dir: m.Dir(), Mesh: m})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = sup.Close(ctx)
	})
	ctx, cancel := context.WithCancel(context.Background())
	stop := manager.Run(ctx, m, sup, nil)
	t.Cleanup(func() {
		cancel()
		stop()
	})
	out := map[string]*agent{}
	for _, name := range names {
		if _, err := sup.Start(context.Background(), admin.AgentStart{Space: "main", Name: name,
			File: filepath.Join(agents, name+".md"), Command: []string{"sleep", "300"}, Runtime: "plain",
			WorkDir: project}); err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		creds, err := os.ReadFile(filepath.Join(launch.StateDir(m.Dir(), "main", name), name+".creds"))
		if err != nil {
			t.Fatal(err)
		}
		cred, err := endpoint.ParseCredential(creds)
		if err != nil {
			t.Fatal(err)
		}
		inbox := mcpserver.NewInbox(0)
		ctx, cancel := context.WithTimeout(context.Background(), callWait)
		e, err := endpoint.Connect(ctx, endpoint.Options{InProcess: m.InProcess(), Space: "main", Creds: creds,
			Handler: inbox.Handle})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close(context.Background()) })
		out[name] = serveWith(t, name, e, inbox, mcpserver.Options{Manager: mcpserver.AccessOf(cred)})
	}
	return out, sup, m
}

// serveWith is serve with opts: the MCP server of e and inbox, a client connected in memory.
func serveWith(t *testing.T, name string, e *endpoint.Endpoint, inbox *mcpserver.Inbox, opts mcpserver.Options) *agent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callWait)
	defer cancel()
	srv := mcpserver.NewServer(e, inbox, opts)
	t.Cleanup(srv.Close)
	a := &agent{name: name, e: e, updates: make(chan string, 64)}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatalf("serve %s: %v", name, err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test-" + name, Version: "1"}, nil)
	if a.cs, err = client.Connect(ctx, ct, nil); err != nil {
		t.Fatalf("client of %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = a.cs.Close()
		_ = ss.Wait()
	})
	return a
}

func toolNames(t *testing.T, a *agent) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callWait)
	defer cancel()
	tools, err := a.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func TestManagerToolsFollowTheCredential(t *testing.T) {
	agents, sup, m := supervised(t, "lead", "worker")
	plain := newAgent(t, m, "plain", provisioner.Grants{Subscribe: []string{"team.general"}})
	tests := []struct {
		name  string
		a     *agent
		tools map[string]bool
	}{
		{"a supervised agent with the spawn capability", agents["lead"], map[string]bool{"cotal_spawn": true, "cotal_persona": true, "cotal_despawn": true}},
		{"a supervised agent without it", agents["worker"], map[string]bool{"cotal_spawn": false, "cotal_persona": false, "cotal_despawn": true}},
		{"an agent minted plainly", plain, map[string]bool{"cotal_spawn": false, "cotal_persona": false, "cotal_despawn": false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			names := toolNames(t, tt.a)
			for tool, want := range tt.tools {
				if got := slices.Contains(names, tool); got != want {
					t.Errorf("%s listed: %v, want %v (tools %v)", tool, got, want, names)
				}
			}
		})
	}

	// The call path end to end: lead reads worker's file, worker despawns itself, and lead
	// spawns it again as its own teammate.
	var p wire.ManagerPersona
	agents["lead"].ok(t, "cotal_persona", map[string]any{"name": "worker"}, &p)
	if p.Persona != "You build." {
		t.Fatalf("cotal_persona = %+v", p)
	}
	res := agents["lead"].call(t, "cotal_spawn", map[string]any{"name": "../x"})
	if !res.IsError || !strings.Contains(text(res), "invalid argument") {
		t.Fatalf("cotal_spawn of a path: %s", text(res))
	}
	res = agents["lead"].call(t, "cotal_spawn", map[string]any{"name": "worker"})
	if !res.IsError || !strings.Contains(text(res), "worker") {
		t.Fatalf("cotal_spawn of a running name: %s", text(res))
	}
	var v struct{ Name, State string }
	agents["worker"].ok(t, "cotal_despawn", map[string]any{}, &v)
	if v.Name != "worker" {
		t.Fatalf("cotal_despawn = %+v", v)
	}
	await.True(t, 30*time.Second, "worker despawned", func() bool {
		for _, a := range sup.List() {
			if a.Name == "worker" {
				return false
			}
		}
		return true
	})
	var spawned wire.ManagedAgent
	agents["lead"].ok(t, "cotal_spawn", map[string]any{"name": "worker"}, &spawned)
	if spawned.Name != "worker" || spawned.SpawnedBy == "" {
		t.Fatalf("cotal_spawn = %+v", spawned)
	}
}
