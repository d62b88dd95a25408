package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/internal/cli/launch"
	"github.com/cotal-go/cotal/internal/procstat"
)

// runSpawned runs COMMAND in the foreground and revokes the credential once it exits,
// whatever the exit. An interrupt typed at the terminal reaches COMMAND itself, which decides what it means
// (Claude Code stops a turn); a SIGTERM or SIGHUP sent to spawn is passed on to it. The mesh
// watches COMMAND's process meanwhile, so a spawn killed with SIGKILL leaves the credential
// active only until COMMAND is gone too.
func runSpawned(cmd *cobra.Command, c *admin.Client, s *launch.Agent) error {
	argv := s.Argv()
	stderr := cmd.ErrOrStderr()
	readACL := s.Agent.AllowSubscribe
	if len(readACL) == 0 {
		readACL = s.Agent.Subscribe // the mint's default
	}
	fmt.Fprintf(stderr, "spawned %s (%s) in space %s: subscribe %v, allowSubscribe %v, allowPublish %v; files in %s\n",
		s.Agent.Name, s.Cred.ID, s.Cred.Space, s.Agent.Subscribe, readACL, s.Agent.AllowPublish, s.State)
	child := exec.Command(argv[0], argv[1:]...)
	child.Env = append(os.Environ(), s.Env()...)
	child.Stdin, child.Stdout, child.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), stderr
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	runErr := child.Start()
	if runErr == nil {
		watchSpawned(cmd, c, s, child.Process.Pid)
		done := make(chan error, 1)
		go func() { done <- child.Wait() }()
		runErr = forwardUntilExit(child, sigs, done)
	}
	if err := s.Revoke(); err != nil {
		return errors.Join(commandErr(argv[0], runErr), fmt.Errorf("revoke %s's credential %s: %w; revoke it with `cotal auth revoke %s --dir %s --space %s`",
			s.Agent.Name, s.Cred.ID, err, s.Cred.ID, s.Dir, s.Cred.Space))
	}
	ctx, cancel := newTimeoutContext(5 * time.Second)
	defer cancel()
	_ = c.UnwatchAgent(ctx, s.Cred.Space, s.Agent.Name) // revoked already; the watch would only revoke again
	fmt.Fprintf(stderr, "despawned %s: credential %s revoked\n", s.Agent.Name, s.Cred.ID)
	return commandErr(argv[0], runErr)
}

// watchSpawned asks the mesh to revoke the credential once the runtime, pid, is gone; without
// it a spawn killed with SIGKILL leaves the credential active until it expires, which spawn
// says.
func watchSpawned(cmd *cobra.Command, c *admin.Client, s *launch.Agent, pid int) {
	st, _ := procstat.Read(pid)
	ctx, cancel := newTimeoutContext(5 * time.Second)
	defer cancel()
	err := c.WatchAgent(ctx, admin.AgentWatch{Space: s.Cred.Space, Name: s.Agent.Name, Credential: s.Cred.ID,
		PID: pid, StartTime: st.Start})
	if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: the mesh does not watch %s (%v): if this spawn is killed, revoke %s with `cotal auth revoke %s --dir %s --space %s`\n",
			s.Agent.Name, err, s.Cred.ID, s.Cred.ID, s.Dir, s.Cred.Space)
	}
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
