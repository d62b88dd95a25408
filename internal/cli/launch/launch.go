package launch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/internal/cli/agentfile"
	"github.com/cotal-go/cotal/internal/local"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

// The environment variables a runtime is given beside its parent's.
const (
	EnvLink  = "COTAL_LINK"
	EnvCreds = "COTAL_CREDS"
)

// ErrWideGrant: an agent file grants channels of every team, which is minted only when told.
var ErrWideGrant = admin.ErrWideGrant

// Runtimes are the values of Spec.Runtime.
var Runtimes = map[string]bool{"auto": true, "claude": true, "plain": true}

// Minter mints and revokes credentials on a mesh: admin.Client over the socket, or Mesh in
// the process that runs it.
type Minter interface {
	Mint(ctx context.Context, spec admin.MintSpec) (*admin.MintedCredential, error)
	Revoke(ctx context.Context, spaceName, id string) error
	Credentials(ctx context.Context, spaceName string) ([]space.CredentialInfo, error)
}

// Mesh is the Minter of the mesh running in this process.
type Mesh struct{ M *space.Mesh }

// Mint mints spec in process (admin.Mint).
func (m Mesh) Mint(ctx context.Context, spec admin.MintSpec) (*admin.MintedCredential, error) {
	return admin.Mint(ctx, m.M, spec)
}

// Revoke revokes id in spaceName.
func (m Mesh) Revoke(ctx context.Context, spaceName, id string) error {
	return m.M.Revoke(ctx, spaceName, id)
}

// Credentials lists spaceName's credentials.
func (m Mesh) Credentials(_ context.Context, spaceName string) ([]space.CredentialInfo, error) {
	return m.M.Credentials(spaceName)
}

// Spec is one runtime to prepare.
type Spec struct {
	Dir     string           // the mesh's data directory
	Space   string           // the space the agent joins
	Agent   *agentfile.Agent // the agent file, parsed
	File    string           // the agent file's path
	Link    string           // the space's join link
	Runtime string           // claude, plain or auto (claude when Command[0] is named claude)
	Command []string         // the runtime's command line, before the preset's flags
	// Supervised mints the credential for a runtime the supervisor of `cotal up` runs: it may
	// reach the manager control service, with the file's capabilities (docs/agents.md "The
	// manager service"). A foreground `cotal spawn` gets neither.
	Supervised bool
}

// CheckGrants refuses an agent file whose grants cover every team's channels, unless
// anyChannel says that is meant.
func CheckGrants(a *agentfile.Agent, anyChannel bool) error {
	if wide := a.WideGrants(); len(wide) > 0 && !anyChannel {
		return fmt.Errorf("%w: %s; narrow it to your team's channels, or pass --allow-any-channel",
			ErrWideGrant, strings.Join(wide, "; "))
	}
	return nil
}

// Agent is a prepared runtime: its credential, minted, and its files, written.
type Agent struct {
	Spec
	State string                  // the private directory of its files
	Cred  *admin.MintedCredential // the credential it runs with
	m     Minter
}

// StateDir is where the files of name's runtimes in spaceName live, under the mesh's data
// directory, which the key store keeps private.
func StateDir(dir, spaceName, name string) string {
	return filepath.Join(dir, "spawn", wire.Sanitize(spaceName), name)
}

// CredsPath is the agent's credential file.
func (a *Agent) CredsPath() string { return filepath.Join(a.State, a.Agent.Name+".creds") }

// MCPPath is the agent's MCP configuration.
func (a *Agent) MCPPath() string { return filepath.Join(a.State, "mcp.json") }

// PersonaPath is the agent file's body.
func (a *Agent) PersonaPath() string { return filepath.Join(a.State, "persona.md") }

// Prepare mints the agent's credential, for the identity of its last spawn when there was
// one, and writes the runtime's files; should a write fail, the credential is revoked.
func Prepare(ctx context.Context, m Minter, s Spec) (*Agent, error) {
	if err := agentfile.CheckName(s.Agent.Name); err != nil {
		return nil, err
	}
	if len(s.Command) == 0 {
		return nil, errors.New("no command to run")
	}
	a := &Agent{Spec: s, State: StateDir(s.Dir, s.Space, s.Agent.Name), m: m}
	if err := MakePrivateDir(s.Dir, a.State); err != nil {
		return nil, err
	}
	seed, err := lastIdentity(a.CredsPath())
	if err != nil {
		return nil, err
	}
	if err := a.checkNotActive(ctx); err != nil {
		return nil, err
	}
	g := s.Agent.Grants()
	a.Cred, err = m.Mint(ctx, admin.MintSpec{Space: s.Space, Name: s.Agent.Name,
		Profile: wire.ProfileAgent, Role: g.Role, Subscribe: g.Subscribe, AllowSubscribe: g.AllowSubscribe,
		AllowPublish: g.AllowPublish, IdentitySeed: seed, ManagerControl: s.Supervised,
		Capabilities: capabilities(s)})
	if err != nil {
		return nil, fmt.Errorf("mint %s from %s: %w", s.Agent.Name, s.File, err)
	}
	if err := a.writeFiles(); err != nil {
		if rerr := a.Revoke(); rerr != nil {
			return nil, fmt.Errorf("%w; revoking %s failed too: %w", err, a.Cred.ID, rerr)
		}
		return nil, fmt.Errorf("%w; the credential was revoked", err)
	}
	return a, nil
}

// capabilities are the file's capabilities when the runtime is supervised, else none: only
// a supervised runtime reaches the manager service they are asked of.
func capabilities(s Spec) []string {
	if !s.Supervised {
		return nil
	}
	return s.Agent.Capabilities
}

// checkNotActive refuses an agent whose name an active credential holds: re-minting its
// identity would cut off a runtime still running, and another credential's name is not this
// file's to take.
func (a *Agent) checkNotActive(ctx context.Context) error {
	recs, err := a.m.Credentials(ctx, a.Space)
	if err != nil {
		return err
	}
	for _, r := range recs {
		if r.Name == a.Agent.Name && r.Active(time.Now()) {
			return fmt.Errorf("%w: %s holds the name %s in space %s; stop its runtime, or if none runs, "+
				"`cotal auth revoke %s --dir %s --space %s`", admin.ErrAgentActive, r.ID, r.Name, a.Space, r.ID, a.Dir, a.Space)
		}
	}
	return nil
}

// Revoke revokes the agent's credential, on a context of its own: the caller's may be over.
func (a *Agent) Revoke() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return a.m.Revoke(ctx, a.Cred.Space, a.Cred.ID)
}

// MakePrivateDir creates path under base with mode 0700 and refuses it, or any directory
// between, when another user could write it (local.CheckPrivateDir).
func MakePrivateDir(base, path string) error {
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

// writeFiles writes the credential, the MCP configuration and the persona, each 0600.
func (a *Agent) writeFiles() error {
	mcp, err := a.mcpConfig()
	if err != nil {
		return err
	}
	for _, f := range []struct {
		path string
		data []byte
	}{{a.CredsPath(), a.Cred.Creds}, {a.MCPPath(), mcp}, {a.PersonaPath(), []byte(a.Agent.Persona + "\n")}} {
		// WriteSecretFile writes any secret the way a credential is written: 0600 from creation.
		if err := provisioner.WriteSecretFile(f.path, f.data); err != nil {
			return err
		}
	}
	return nil
}
