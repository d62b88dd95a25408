package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"
)

// mcpServerName is the key of cotal's entry in the MCP configuration spawn writes; a runtime
// names the tools after it (Claude Code: mcp__cotal__cotal_send).
const mcpServerName = "cotal"

// mcpConfigFile is the shape Claude Code reads from .mcp.json and --mcp-config, which other
// runtimes take too.
type mcpConfigFile struct {
	MCPServers map[string]mcpServerEntry `json:"mcpServers"`
}

type mcpServerEntry struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// mcpConfig is the MCP configuration that runs this binary's `cotal mcp` as the agent.
func (s *spawned) mcpConfig() ([]byte, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the cotal binary for the MCP server entry: %w", err)
	}
	return json.MarshalIndent(mcpConfigFile{MCPServers: map[string]mcpServerEntry{mcpServerName: {
		Command: exe,
		Args:    []string{"mcp", "--link", s.link, "--creds", s.credsPath()},
		Env:     map[string]string{},
	}}}, "", "  ")
}

// env is what COMMAND is given beside the parent's environment.
func (s *spawned) env() []string {
	env := []string{envLink + "=" + s.link, envCreds + "=" + s.credsPath(),
		"COTAL_NAME=" + s.agent.Name, "COTAL_SPACE=" + s.cred.Space,
		"COTAL_AGENT_FILE=" + s.file, "COTAL_MCP_CONFIG=" + s.mcpPath(),
		"COTAL_PERSONA_FILE=" + s.personaPath()}
	if s.agent.Role != "" {
		env = append(env, "COTAL_ROLE="+s.agent.Role)
	}
	return env
}

// argv is COMMAND with the runtime's preset flags after its first word.
func (s *spawned) argv() []string {
	cmd := s.opts.command
	rt := s.opts.runtime
	if rt == "auto" {
		rt = "plain"
		if filepath.Base(cmd[0]) == "claude" {
			rt = "claude"
		}
	}
	if rt == "plain" {
		return cmd
	}
	// --mcp-config takes several values; in its = form it takes one, so a prompt in COMMAND's
	// own arguments is not read as a second configuration.
	argv := []string{cmd[0], "--mcp-config=" + s.mcpPath()}
	if s.agent.Persona != "" {
		argv = append(argv, "--append-system-prompt", s.agent.Persona)
	}
	if s.agent.Model != "" {
		argv = append(argv, "--model", s.agent.Model)
	}
	return append(argv, cmd[1:]...)
}

// run runs COMMAND in the foreground and revokes the credential once it exits, whatever the
// exit. An interrupt typed at the terminal reaches COMMAND itself, which decides what it means
// (Claude Code stops a turn); a SIGTERM or SIGHUP sent to spawn is passed on to it.
func (s *spawned) run(cmd *cobra.Command) error {
	argv := s.argv()
	stderr := cmd.ErrOrStderr()
	readACL := s.agent.AllowSubscribe
	if len(readACL) == 0 {
		readACL = s.agent.Subscribe // the mint's default
	}
	fmt.Fprintf(stderr, "spawned %s (%s) in space %s: subscribe %v, allowSubscribe %v, allowPublish %v; files in %s\n",
		s.agent.Name, s.cred.ID, s.cred.Space, s.agent.Subscribe, readACL, s.agent.AllowPublish, s.state)
	child := exec.Command(argv[0], argv[1:]...)
	child.Env = append(os.Environ(), s.env()...)
	child.Stdin, child.Stdout, child.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), stderr
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	runErr := child.Start()
	if runErr == nil {
		done := make(chan error, 1)
		go func() { done <- child.Wait() }()
		runErr = forwardUntilExit(child, sigs, done)
	}
	if err := s.revoke(); err != nil {
		return errors.Join(commandErr(argv[0], runErr), fmt.Errorf("revoke %s's credential %s: %w; revoke it with `cotal auth revoke %s --dir %s --space %s`",
			s.agent.Name, s.cred.ID, err, s.cred.ID, s.dir, s.cred.Space))
	}
	fmt.Fprintf(stderr, "despawned %s: credential %s revoked\n", s.agent.Name, s.cred.ID)
	return commandErr(argv[0], runErr)
}

// forwardUntilExit passes each signal of sigs to child until done says it exited.
func forwardUntilExit(child *exec.Cmd, sigs <-chan os.Signal, done <-chan error) error {
	for {
		select {
		case err := <-done:
			return err
		case sig := <-sigs:
			_ = child.Process.Signal(sig)
		}
	}
}

// commandErr says how COMMAND ended, when it failed.
func commandErr(name string, err error) error {
	var exit *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &exit):
		return fmt.Errorf("%s exited with %s", name, exit.ProcessState)
	}
	return fmt.Errorf("run %s: %w", name, err)
}
