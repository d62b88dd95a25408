package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/termsafe"
	"github.com/cotal-go/cotal/wire"
)

// ManagerAccess is what the agent may ask of the manager control service (docs/agents.md "The
// manager service"), as its credential says (endpoint.Credential.ManagerControl and
// Capabilities). The broker and the service decide; these only choose the tools listed.
type ManagerAccess struct {
	// Despawn lists cotal_despawn: the agent runs under the supervisor of `cotal up`.
	Despawn bool
	// Spawn lists cotal_spawn and cotal_persona: the credential holds the spawn capability.
	Spawn bool
}

// AccessOf is the manager access credential c carries: despawn when it may reach the manager
// service, spawn when it also holds the spawn capability.
func AccessOf(c endpoint.Credential) ManagerAccess {
	return ManagerAccess{Despawn: c.ManagerControl,
		Spawn: c.ManagerControl && slices.Contains(c.Capabilities, wire.CapabilitySpawn)}
}

// addManagerTools registers the manager tools opts.Manager allows.
func (s *Server) addManagerTools() {
	if s.opts.Manager.Despawn {
		mcp.AddTool(s.mcp, &mcp.Tool{Name: "cotal_despawn", Description: "End your own session: the supervisor " +
			"stops your runtime and revokes your credential. Use it when your work is done. With name, despawn a " +
			"teammate you spawned with cotal_spawn instead."}, escapedErrors(s.despawn))
	}
	if s.opts.Manager.Spawn {
		mcp.AddTool(s.mcp, &mcp.Tool{Name: "cotal_spawn", Description: "Start a teammate from an agent file " +
			"(.cotal/agents/NAME.md) under the mesh's supervisor; it joins the mesh with exactly the file's grants, " +
			"which must be within your own. Read the file with cotal_persona first."}, escapedErrors(s.spawn))
		mcp.AddTool(s.mcp, &mcp.Tool{Name: "cotal_persona", Description: "Show an agent file by name: its role, " +
			"channel grants, capabilities and persona, to decide whether to spawn it."}, escapedErrors(s.persona))
	}
}

// ManagerTimeout is added to Options.CallTimeout for a manager request: a spawn mints, writes
// files and starts a process, a despawn of a teammate waits for it to end.
const ManagerTimeout = 30 * time.Second

type agentNameInput struct {
	Name string `json:"name" jsonschema:"the agent file's name, e.g. reviewer (.cotal/agents/reviewer.md)"`
}

type despawnInput struct {
	Name string `json:"name,omitempty" jsonschema:"a teammate you spawned; empty despawns yourself"`
}

// managerRequest sends op to the manager service and decodes its data into out.
func (s *Server) managerRequest(ctx context.Context, action, op string, args, out any) error {
	if err := s.online(action); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout+ManagerTimeout)
	defer cancel()
	reply, err := s.e.Request(ctx, wire.ManagerService, op, args)
	if err != nil {
		return meshError(action, err)
	}
	if out != nil && len(reply.Data) > 0 {
		if err := json.Unmarshal(reply.Data, out); err != nil {
			return fmt.Errorf("%s: the manager answered %w", action, err)
		}
	}
	return nil
}

func checkAgentName(name string) error {
	// The service checks the name by agentfile's rule; this refuses early what is no name.
	if !wire.IsToken(name) {
		return fmt.Errorf("%w: name %q: use only letters, digits, '_' and '-' (an agent file's name, not a path)",
			ErrInvalidArgument, name)
	}
	return nil
}

func (s *Server) spawn(ctx context.Context, _ *mcp.CallToolRequest, in agentNameInput) (*mcp.CallToolResult, wire.ManagedAgent, error) {
	if err := checkAgentName(in.Name); err != nil {
		return nil, wire.ManagedAgent{}, err
	}
	var a wire.ManagedAgent
	if err := s.managerRequest(ctx, "spawn "+in.Name, wire.OpManagerSpawn, wire.ManagerNameArgs{Name: in.Name}, &a); err != nil {
		return nil, wire.ManagedAgent{}, err
	}
	return nil, safeAgent(a), nil
}

func (s *Server) persona(ctx context.Context, _ *mcp.CallToolRequest, in agentNameInput) (*mcp.CallToolResult, wire.ManagerPersona, error) {
	if err := checkAgentName(in.Name); err != nil {
		return nil, wire.ManagerPersona{}, err
	}
	var p wire.ManagerPersona
	if err := s.managerRequest(ctx, "read the agent file "+in.Name, wire.OpManagerPersona, wire.ManagerNameArgs{Name: in.Name}, &p); err != nil {
		return nil, wire.ManagerPersona{}, err
	}
	return nil, wire.ManagerPersona{Name: termsafe.String(p.Name), Role: termsafe.String(p.Role),
		Description: termsafe.String(p.Description), Subscribe: safeList(p.Subscribe),
		AllowSubscribe: safeList(p.AllowSubscribe), AllowPublish: safeList(p.AllowPublish),
		Capabilities: safeList(p.Capabilities), Persona: termsafe.Text(p.Persona)}, nil
}

func (s *Server) despawn(ctx context.Context, _ *mcp.CallToolRequest, in despawnInput) (*mcp.CallToolResult, wire.ManagerDespawnReply, error) {
	if in.Name != "" {
		if err := checkAgentName(in.Name); err != nil {
			return nil, wire.ManagerDespawnReply{}, err
		}
	}
	var v wire.ManagerDespawnReply
	var args any
	if in.Name != "" {
		args = wire.ManagerDespawnArgs{Name: in.Name}
	}
	if err := s.managerRequest(ctx, "despawn", wire.OpManagerDespawn, args, &v); err != nil {
		return nil, wire.ManagerDespawnReply{}, err
	}
	return nil, wire.ManagerDespawnReply{Name: termsafe.String(v.Name), State: termsafe.String(v.State)}, nil
}

func safeAgent(a wire.ManagedAgent) wire.ManagedAgent {
	return wire.ManagedAgent{Name: termsafe.String(a.Name), ID: termsafe.String(a.ID), State: termsafe.String(a.State),
		Presence: termsafe.String(a.Presence), Restarts: a.Restarts, SpawnedBy: termsafe.String(a.SpawnedBy)}
}

func safeList(l []string) []string {
	out := make([]string, len(l))
	for i, x := range l {
		out[i] = termsafe.String(x)
	}
	return out
}
