package cli

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/wire"
)

const leadFile = `---
name: lead
subscribe: [general]
allowPublish: [general]
capabilities: [spawn]
---
You lead; spawn a helper when there is work.
`

const helperFile = `---
name: helper
subscribe: [general]
allowPublish: [general]
---
You help.
`

// TestUpServesTheManagerService runs `cotal up`, starts a capable agent whose runtime only
// sleeps, and speaks for it over the join link with the credential the supervisor wrote: it
// is refused worker, whose role it lacks, spawns helper from its file, sees it in `cotal ps`
// as its own, and despawns it, which revokes helper's credential.
func TestUpServesTheManagerService(t *testing.T) {
	bin := cotalBin(t)
	project, mesh := t.TempDir(), t.TempDir()
	up := startUp(t, bin, mesh)
	writeAgentFile(t, project, "lead", leadFile)
	writeAgentFile(t, project, "worker", workerFile) // role build: wider than lead
	writeAgentFile(t, project, "helper", helperFile)
	if out, stderr, code := runIn(t, bin, project, nil, "start", "lead", "--dir", mesh, "--", "sleep", "300"); code != 0 {
		t.Fatalf("start lead: exit %d: %s%s", code, out, stderr)
	}
	lead := awaitAgent(t, bin, mesh, "lead", "running", func(a admin.AgentInfo) bool { return a.State == admin.AgentRunning })
	creds, err := os.ReadFile(filepath.Join(mesh, "spawn", "main", "lead", "lead.creds"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e, err := endpoint.Connect(ctx, endpoint.Options{Link: up.link, Creds: creds})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	if e.ID() != lead.ID {
		t.Fatalf("connected as %s, ps lists lead as %s", e.ID(), lead.ID)
	}
	if _, err := e.Request(ctx, wire.ManagerService, wire.OpManagerSpawn, wire.ManagerNameArgs{Name: "worker"}); !errors.Is(err, wire.ErrControlRefused) ||
		!strings.Contains(err.Error(), `role "build"`) {
		t.Fatalf("spawn of a file with a role lead lacks: %v, want refused", err)
	}
	// The teammate is a plain sleep too: it runs the spawner's command.
	r, err := e.Request(ctx, wire.ManagerService, wire.OpManagerSpawn, wire.ManagerNameArgs{Name: "helper"})
	if err != nil {
		t.Fatalf("spawn helper: %v", err)
	}
	var spawned wire.ManagedAgent
	if err := json.Unmarshal(r.Data, &spawned); err != nil || spawned.SpawnedBy != lead.ID {
		t.Fatalf("spawn answered %s (%v)", r.Data, err)
	}
	worker := awaitAgent(t, bin, mesh, "helper", "running, spawned by lead", func(a admin.AgentInfo) bool {
		return a.State == admin.AgentRunning && a.SpawnedBy == lead.ID
	})
	if len(worker.Command) == 0 || !strings.HasSuffix(worker.Command[0], "sleep") {
		t.Errorf("helper runs %v, want lead's command", worker.Command)
	}
	if _, err := e.Request(ctx, wire.ManagerService, wire.OpManagerDespawn, wire.ManagerDespawnArgs{Name: "helper"}); err != nil {
		t.Fatalf("despawn helper: %v", err)
	}
	checkRevoked(t, bin, mesh, worker.ID)
	if _, ok := psAgent(t, bin, mesh, "helper"); ok {
		t.Error("ps still lists helper after its despawn")
	}

	t.Run("cotal mcp offers the manager tools the credential carries", func(t *testing.T) {
		lead := startMCP(t, bin, up.link, filepath.Join(mesh, "spawn", "main", "lead", "lead.creds"), "lead")
		plain := startMCP(t, bin, up.link, mintAgent(t, bin, mesh, "plain"), "plain")
		for _, tt := range []struct {
			a    *mcpAgent
			want map[string]bool
		}{
			{lead, map[string]bool{"cotal_spawn": true, "cotal_persona": true, "cotal_despawn": true}},
			{plain, map[string]bool{"cotal_spawn": false, "cotal_persona": false, "cotal_despawn": false}},
		} {
			tools, err := tt.a.cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range tt.want {
				if got := slices.ContainsFunc(tools.Tools, func(x *mcp.Tool) bool { return x.Name == name }); got != want {
					t.Errorf("%s lists %s: %v, want %v", tt.a.name, name, got, want)
				}
			}
		}
		var spawned wire.ManagedAgent
		lead.ok(t, "cotal_spawn", map[string]any{"name": "helper"}, &spawned)
		if spawned.Name != "helper" {
			t.Fatalf("cotal_spawn = %+v", spawned)
		}
		awaitAgent(t, bin, mesh, "helper", "running, spawned through MCP", func(a admin.AgentInfo) bool {
			return a.State == admin.AgentRunning && a.SpawnedBy == e.ID()
		})
		lead.ok(t, "cotal_despawn", map[string]any{"name": "helper"}, nil)
		if _, ok := psAgent(t, bin, mesh, "helper"); ok {
			t.Error("ps still lists helper after cotal_despawn")
		}
	})
}
