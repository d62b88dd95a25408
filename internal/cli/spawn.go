package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cotal-go/cotal/internal/cli/agentfile"
	"github.com/cotal-go/cotal/internal/cli/launch"
)

func newSpawnCmd() *cobra.Command {
	var o launchOptions
	cmd := &cobra.Command{
		Use:   "spawn NAME [-- COMMAND ARGS...]",
		Short: "Run an agent runtime as the agent of an agent file, on the running mesh",
		Long: `spawn mints the credential the agent file NAME declares ("cotal personas" finds it) on
the mesh running on the data directory, runs COMMAND (claude without one) in the foreground
as that agent, and revokes the credential when COMMAND exits. The next spawn of NAME re-mints
the same identity.

COMMAND finds the mesh through the files spawn writes in DIR/spawn/SPACE/NAME (a private
directory, each file mode 0600): NAME.creds, mcp.json (an MCP server entry running "cotal mcp"
as the agent, in Claude Code's .mcp.json shape) and persona.md (the file's body); and through
the environment: COTAL_LINK, COTAL_CREDS, COTAL_NAME, COTAL_SPACE, COTAL_ROLE, COTAL_AGENT_FILE,
COTAL_MCP_CONFIG and COTAL_PERSONA_FILE. With --runtime claude (the default when COMMAND is
claude) spawn also passes --mcp-config, --append-system-prompt with the persona and --model.

A grant whose first segment is a wildcard (">", "*.x") covers every team's channels; spawn
refuses such a file unless --allow-any-channel says that is meant.`,
		Example: `  cotal spawn reviewer
  cotal spawn reviewer -- claude --permission-mode plan
  cotal spawn --runtime plain builder -- ./my-agent --verbose`,
		Args: o.args("spawn"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.set(args)
			return runSpawn(cmd, o)
		},
	}
	o.addFlags(cmd)
	return cmd
}

// launchOptions is the command line of spawn and start: NAME, then COMMAND only after "--",
// so a flag meant for COMMAND is never taken as theirs.
type launchOptions struct {
	name, space, runtime string
	command              []string
	anyChannel           bool
}

// args is the Args check of verb (spawn or start).
func (o *launchOptions) args(verb string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return fmt.Errorf("%s needs the agent's NAME; `cotal personas list` shows them", verb)
		}
		if dash := cmd.ArgsLenAtDash(); dash != 1 && len(args) > 1 {
			return fmt.Errorf("%s takes one NAME, then the command after --: cotal %s %s -- %s",
				verb, verb, args[0], strings.Join(args[1:], " "))
		}
		return nil
	}
}

// set takes NAME and COMMAND (claude without one) from args.
func (o *launchOptions) set(args []string) {
	o.name, o.command = args[0], args[1:]
	if len(o.command) == 0 {
		o.command = []string{"claude"}
	}
}

// addFlags adds the flags spawn and start share.
func (o *launchOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	addConfigFlags(f)
	f.StringVar(&o.space, "space", "main", "space the agent joins")
	f.StringVar(&o.runtime, "runtime", "auto", "how COMMAND is told about the mesh: claude, plain (files and environment only), or auto (claude when COMMAND is claude)")
	f.BoolVar(&o.anyChannel, "allow-any-channel", false, "mint grants whose first segment is a wildcard (\">\", \"*.x\")")
}

// agentFile checks the runtime preset, then finds NAME's agent file and checks its grants.
func (o *launchOptions) agentFile() (*agentfile.Agent, string, error) {
	if !launch.Runtimes[o.runtime] {
		return nil, "", fmt.Errorf("--runtime %q: use claude, plain or auto", o.runtime)
	}
	a, file, err := loadPersona(o.name)
	if err != nil {
		return nil, "", err
	}
	if err := launch.CheckGrants(a, o.anyChannel); err != nil {
		return nil, "", err
	}
	return a, file, nil
}

func runSpawn(cmd *cobra.Command, o launchOptions) error {
	a, file, err := o.agentFile()
	if err != nil {
		return err
	}
	dir, err := dataDir(cmd)
	if err != nil {
		return err
	}
	c, err := meshClient(cmd, dir)
	if err != nil {
		return err
	}
	links, err := c.Links(cmd.Context())
	if err != nil {
		return err
	}
	link, ok := links[o.space]
	if !ok {
		return fmt.Errorf("the mesh on %s has no space %q; `cotal link` lists its spaces", dir, o.space)
	}
	s, err := launch.Prepare(cmd.Context(), c, launch.Spec{Dir: dir, Space: o.space, Agent: a, File: file,
		Link: link, Runtime: o.runtime, Command: o.command})
	if err != nil {
		return err
	}
	return runSpawned(cmd, c, s)
}
