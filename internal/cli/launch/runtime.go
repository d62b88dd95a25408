package launch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// ServerName is the key of cotal's entry in the MCP configuration; a runtime names the tools
// after it (Claude Code: mcp__cotal__cotal_send).
const ServerName = "cotal"

// MCPConfig is the shape Claude Code reads from .mcp.json and --mcp-config, which other
// runtimes take too.
type MCPConfig struct {
	MCPServers map[string]MCPServer `json:"mcpServers"`
}

// MCPServer is one stdio server of an MCPConfig.
type MCPServer struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// mcpConfig is the MCP configuration that runs this binary's `cotal mcp` as the agent.
func (a *Agent) mcpConfig() ([]byte, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the cotal binary for the MCP server entry: %w", err)
	}
	return json.MarshalIndent(MCPConfig{MCPServers: map[string]MCPServer{ServerName: {
		Command: exe,
		Args:    []string{"mcp", "--link", a.Link, "--creds", a.CredsPath()},
		Env:     map[string]string{},
	}}}, "", "  ")
}

// Env is what the runtime is given beside its parent's environment.
func (a *Agent) Env() []string {
	env := []string{EnvLink + "=" + a.Link, EnvCreds + "=" + a.CredsPath(),
		"COTAL_NAME=" + a.Agent.Name, "COTAL_SPACE=" + a.Cred.Space,
		"COTAL_AGENT_FILE=" + a.File, "COTAL_MCP_CONFIG=" + a.MCPPath(),
		"COTAL_PERSONA_FILE=" + a.PersonaPath()}
	if a.Agent.Role != "" {
		env = append(env, "COTAL_ROLE="+a.Agent.Role)
	}
	return env
}

// Argv is the command with the runtime's preset flags after its first word.
func (a *Agent) Argv() []string {
	cmd := a.Command
	rt := a.Runtime
	if rt == "auto" || rt == "" {
		rt = "plain"
		if filepath.Base(cmd[0]) == "claude" {
			rt = "claude"
		}
	}
	if rt == "plain" {
		return cmd
	}
	// --mcp-config takes several values; in its = form it takes one, so a prompt in the
	// command's own arguments is not read as a second configuration.
	argv := []string{cmd[0], "--mcp-config=" + a.MCPPath()}
	if a.Agent.Persona != "" {
		argv = append(argv, "--append-system-prompt", a.Agent.Persona)
	}
	if a.Agent.Model != "" {
		argv = append(argv, "--model", a.Agent.Model)
	}
	return append(argv, cmd[1:]...)
}
