package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/internal/cli/agentfile"
	"github.com/cotal-go/cotal/internal/local"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/wire"
)

// errSpawned: an active credential already carries the agent's name.
var errSpawned = errors.New("the agent is already active")

// errWideGrant: an agent file grants channels of every team, which spawn mints only when told.
var errWideGrant = errors.New("the agent file grants every channel")

func newSpawnCmd() *cobra.Command {
	var o spawnOptions
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
		Args: spawnArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.name, o.command = args[0], args[1:]
			if len(o.command) == 0 {
				o.command = []string{"claude"}
			}
			return runSpawn(cmd, o)
		},
	}
	f := cmd.Flags()
	addConfigFlags(f)
	f.StringVar(&o.space, "space", "main", "space the agent joins")
	f.StringVar(&o.runtime, "runtime", "auto", "how COMMAND is told about the mesh: claude, plain (files and environment only), or auto (claude when COMMAND is claude)")
	f.BoolVar(&o.anyChannel, "allow-any-channel", false, "mint grants whose first segment is a wildcard (\">\", \"*.x\")")
	return cmd
}

// spawnArgs wants NAME, then COMMAND only after "--", so a flag meant for COMMAND is never
// taken as spawn's.
func spawnArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return errors.New("spawn needs the agent's NAME; `cotal personas list` shows them")
	}
	if dash := cmd.ArgsLenAtDash(); dash != 1 && len(args) > 1 {
		return fmt.Errorf("spawn takes one NAME, then the command after --: cotal spawn %s -- %s",
			args[0], strings.Join(args[1:], " "))
	}
	return nil
}

// spawnOptions is a spawn's command line.
type spawnOptions struct {
	name, space, runtime string
	command              []string
	anyChannel           bool
}

// spawnRuntimes are the --runtime values.
var spawnRuntimes = map[string]bool{"auto": true, "claude": true, "plain": true}

func runSpawn(cmd *cobra.Command, o spawnOptions) error {
	if !spawnRuntimes[o.runtime] {
		return fmt.Errorf("--runtime %q: use claude, plain or auto", o.runtime)
	}
	a, file, err := loadPersona(o.name)
	if err != nil {
		return err
	}
	if wide := a.WideGrants(); len(wide) > 0 && !o.anyChannel {
		return fmt.Errorf("%w: %s; narrow it to your team's channels, or pass --allow-any-channel",
			errWideGrant, strings.Join(wide, "; "))
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
	s := &spawned{client: c, dir: dir, agent: a, file: file, link: link, opts: o}
	if err := s.mint(cmd); err != nil {
		return err
	}
	return s.run(cmd)
}

// spawned is one agent a spawn minted: where its files are and its credential.
type spawned struct {
	client *admin.Client
	dir    string // the mesh's data directory
	agent  *agentfile.Agent
	file   string // the agent file
	link   string
	opts   spawnOptions
	state  string // the private directory of the files spawn writes
	cred   *admin.MintedCredential
}

// spawnStateDir is where the files of name's spawns in spaceName live, under the mesh's
// data directory, which the key store keeps private.
func spawnStateDir(dir, spaceName, name string) string {
	return filepath.Join(dir, "spawn", wire.Sanitize(spaceName), name)
}

func (s *spawned) credsPath() string   { return filepath.Join(s.state, s.agent.Name+".creds") }
func (s *spawned) mcpPath() string     { return filepath.Join(s.state, "mcp.json") }
func (s *spawned) personaPath() string { return filepath.Join(s.state, "persona.md") }

// mint mints the agent's credential, for the identity of its last spawn when there was one,
// and writes the runtime's files; should a write fail, the credential is revoked.
func (s *spawned) mint(cmd *cobra.Command) error {
	s.state = spawnStateDir(s.dir, s.opts.space, s.agent.Name)
	if err := makePrivateDir(s.dir, s.state); err != nil {
		return err
	}
	seed, err := lastIdentity(s.credsPath())
	if err != nil {
		return err
	}
	if err := s.checkNotActive(cmd); err != nil {
		return err
	}
	g := s.agent.Grants()
	s.cred, err = s.client.Mint(cmd.Context(), admin.MintSpec{Space: s.opts.space, Name: s.agent.Name,
		Profile: wire.ProfileAgent, Role: g.Role, Subscribe: g.Subscribe, AllowSubscribe: g.AllowSubscribe,
		AllowPublish: g.AllowPublish, IdentitySeed: seed})
	if err != nil {
		return fmt.Errorf("mint %s from %s: %w", s.agent.Name, s.file, err)
	}
	if err := s.writeFiles(); err != nil {
		if rerr := s.revoke(); rerr != nil {
			return fmt.Errorf("%w; revoking %s failed too: %w", err, s.cred.ID, rerr)
		}
		return fmt.Errorf("%w; the credential was revoked", err)
	}
	return nil
}

// checkNotActive refuses to spawn an agent whose name an active credential holds: re-minting
// its identity would cut off a spawn still running, and another credential's name is not
// this file's to take.
func (s *spawned) checkNotActive(cmd *cobra.Command) error {
	recs, err := s.client.Credentials(cmd.Context(), s.opts.space)
	if err != nil {
		return err
	}
	for _, r := range recs {
		if r.Name == s.agent.Name && r.Active(time.Now()) {
			return fmt.Errorf("%w: %s holds the name %s in space %s; stop its spawn, or if none runs, "+
				"`cotal auth revoke %s --dir %s --space %s`", errSpawned, r.ID, r.Name, s.opts.space, r.ID, s.dir, s.opts.space)
		}
	}
	return nil
}

// makePrivateDir creates path under base with mode 0700 and refuses it, or any directory
// between, when another user could write it (local.CheckPrivateDir).
func makePrivateDir(base, path string) error {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return err
	}
	for d := path; ; d = filepath.Dir(d) {
		if err := local.CheckPrivateDir(d); err != nil {
			return fmt.Errorf("%s: %w", d, err)
		}
		if d == filepath.Clean(base) || d == filepath.Dir(d) {
			return nil
		}
	}
}

// lastIdentity is the seed of the credential a previous spawn left at path, or "" for none.
func lastIdentity(path string) (string, error) {
	data, err := local.ReadPrivate(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("the last spawn's credential %s: %w", path, err)
	}
	seed, err := endpoint.CredentialSeed(data)
	if err != nil {
		return "", fmt.Errorf("the last spawn's credential %s: %w; remove it to spawn a new identity", path, err)
	}
	return seed, nil
}

// revoke revokes the spawned credential, on a context of its own: the command's may be over.
func (s *spawned) revoke() error {
	ctx, cancel := newTimeoutContext(10 * time.Second)
	defer cancel()
	return s.client.Revoke(ctx, s.cred.Space, s.cred.ID)
}

// writeFiles writes the credential, the MCP configuration and the persona, each 0600.
func (s *spawned) writeFiles() error {
	mcp, err := s.mcpConfig()
	if err != nil {
		return err
	}
	for _, f := range []struct {
		path string
		data []byte
	}{{s.credsPath(), s.cred.Creds}, {s.mcpPath(), mcp}, {s.personaPath(), []byte(s.agent.Persona + "\n")}} {
		// WriteCredsBytes writes any secret the way a credential is written: 0600 from creation.
		if err := provisioner.WriteCredsBytes(f.path, f.data); err != nil {
			return err
		}
	}
	return nil
}
