package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/internal/termsafe"
)

func newStartCmd() *cobra.Command {
	var o launchOptions
	cmd := &cobra.Command{
		Use:   "start NAME [-- COMMAND ARGS...]",
		Short: "Run an agent file's runtime in the background, supervised by the running mesh",
		Long: `start asks the mesh running on the data directory ("cotal up") to run COMMAND (claude
without one) as the agent of the agent file NAME, as "cotal spawn" would, but in the
background: the mesh mints the file's credential, writes the same files in DIR/spawn/SPACE/NAME
and runs COMMAND there in a process group of its own, with stdin /dev/null and its output
appended to output.log beside them. COMMAND runs in the current directory, found on the
PATH of start, not of the mesh.

A crash (a non-zero exit or a signal) restarts it with the same credential after 1 s, doubling
to 30 s; after 5 crashes within 10 minutes it is failed and its credential revoked. An exit 0
ends it (exited) and revokes its credential. "cotal stop NAME" stops it; stopping the mesh
stops every agent first. "cotal ps" lists them, "cotal logs NAME" prints their output.

The agent file is found as spawn finds it; a grant whose first segment is a wildcard is
refused unless --allow-any-channel says that is meant.`,
		Example: `  cotal start reviewer
  cotal start builder --runtime plain -- ./my-agent --verbose
  cotal ps`,
		Args: o.args("start"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.set(args)
			return runStart(cmd, o)
		},
	}
	o.addFlags(cmd)
	return cmd
}

func runStart(cmd *cobra.Command, o launchOptions) error {
	_, file, err := o.agentFile()
	if err != nil {
		return err
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	// The mesh runs COMMAND with its own PATH and directory: it is given the path found here.
	exe, err := exec.LookPath(o.command[0])
	if err != nil {
		return fmt.Errorf("%s: %w; pass its path, or install it", o.command[0], err)
	}
	if !filepath.IsAbs(exe) {
		exe = filepath.Join(wd, exe)
	}
	o.command = append([]string{exe}, o.command[1:]...)
	c, err := localMesh(cmd)
	if err != nil {
		return err
	}
	info, err := c.StartAgent(cmd.Context(), admin.AgentStart{Space: o.space, Name: o.name, File: file,
		Command: o.command, Runtime: o.runtime, WorkDir: wd, AllowAnyChannel: o.anyChannel})
	if err != nil {
		return withHint(err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "started %s (%s) in space %s: pid %d; output in %s\n",
		info.Name, info.ID, info.Space, info.PID, info.Log)
	return nil
}

func newPsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ps",
		Short: "List the agents the running mesh supervises",
		Long: `ps lists the agents "cotal start" runs under the mesh on the data directory: name,
space, pid, state (running, restarting, stopping, exited, failed), uptime of the current run,
restarts, presence as the mesh's roster sees the agent's identity (online, offline, or unknown
when it never appeared) and the last line of its output.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := localMesh(cmd)
			if err != nil {
				return err
			}
			list, err := c.Agents(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(list)
			}
			printAgents(cmd.OutOrStdout(), list, time.Now())
			return nil
		},
	}
	addAdminFlags(cmd, &asJSON)
	return cmd
}

// psLastLine bounds the output line ps prints, in runes.
const psLastLine = 60

// printAgents prints list as a table; every text the agents wrote goes through termsafe.
func printAgents(w io.Writer, list []admin.AgentInfo, now time.Time) {
	if len(list) == 0 {
		fmt.Fprintln(w, "no supervised agents; `cotal start NAME` runs one")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSPACE\tPID\tSTATE\tUPTIME\tRESTARTS\tPRESENCE\tLAST OUTPUT")
	for _, a := range list {
		pid, uptime := "-", "-"
		if a.PID != 0 {
			pid = strconv.Itoa(a.PID)
		}
		if !a.Started.IsZero() {
			uptime = now.Sub(a.Started).Round(time.Second).String()
		}
		last := []rune(a.LastLine)
		if len(last) > psLastLine {
			last = append(last[:psLastLine-1], '…')
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", termsafe.String(a.Name), termsafe.String(a.Space), pid,
			termsafe.String(a.State), uptime, a.Restarts, termsafe.String(a.Presence), termsafe.String(string(last)))
	}
	_ = tw.Flush()
}

func newStopCmd() *cobra.Command {
	var spaceName string
	cmd := &cobra.Command{
		Use:   "stop NAME",
		Short: "Stop a supervised agent and revoke its credential",
		Long: `stop ends an agent "cotal start" runs: SIGTERM to its process group, SIGKILL after 5 s,
then its credential is revoked and ps no longer lists it. An agent that exited or failed is
only taken off the list.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := localMesh(cmd)
			if err != nil {
				return err
			}
			if err := c.StopAgent(cmd.Context(), spaceName, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "stopped %s in space %s; its credential is revoked\n",
				termsafe.String(args[0]), termsafe.String(spaceName))
			return nil
		},
	}
	addConfigFlags(cmd.Flags())
	cmd.Flags().StringVar(&spaceName, "space", "main", "space of the agent")
	return cmd
}

func newLogsCmd() *cobra.Command {
	var spaceName string
	var n int
	cmd := &cobra.Command{
		Use:   "logs NAME",
		Short: "Print the last lines of a supervised agent's output",
		Long: `logs prints the last lines of what an agent "cotal start" runs wrote to its stdout and
stderr (DIR/spawn/SPACE/NAME/output.log), terminal escapes made visible.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if n < 0 {
				return fmt.Errorf("-n %d: pass a count of lines", n)
			}
			c, err := localMesh(cmd)
			if err != nil {
				return err
			}
			l, err := c.AgentLogs(cmd.Context(), spaceName, args[0], n)
			if err != nil {
				return err
			}
			for _, line := range l.Lines {
				fmt.Fprintln(cmd.OutOrStdout(), termsafe.String(line))
			}
			return nil
		},
	}
	addConfigFlags(cmd.Flags())
	cmd.Flags().StringVar(&spaceName, "space", "main", "space of the agent")
	cmd.Flags().IntVarP(&n, "lines", "n", 20, "how many of the last lines to print")
	return cmd
}
