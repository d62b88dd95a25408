package cli

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

// Environment variables client commands read when --link and --creds are not given.
const (
	envLink  = "COTAL_LINK"
	envCreds = "COTAL_CREDS"
)

// Lifetimes of the credentials a client command mints for itself beside `cotal up`: a
// one-shot command's expires on its own; a streaming command's is revoked when it exits.
const (
	oneShotLifetime   = 5 * time.Minute
	streamingLifetime = 24 * time.Hour
)

// Client command errors.
var (
	// errNoMesh: nothing answers on the data directory's admin socket.
	errNoMesh = errors.New("no cotal mesh is running")
	// errNoMeshData: the data directory holds no key store: no mesh ran there and nothing was
	// minted there.
	errNoMeshData = errors.New("no mesh data")
	// errBadCreds: the .creds file cannot be read or is not a user credential.
	errBadCreds = errors.New("bad creds file")
	// errUnreachable: nothing answers at the join link's address.
	errUnreachable = errors.New("cannot reach the mesh")
	// errRefused: the mesh refused the credential at connect.
	errRefused = errors.New("the mesh refused the credential")
	// errWrongSpace: the join link names a space the credential does not belong to, or one
	// the mesh does not have.
	errWrongSpace = errors.New("wrong space")
)

// clientFlags are the connection flags every client command shares (see connectHelp).
type clientFlags struct {
	link, creds, space string
	asJSON             bool
}

// connectHelp is the part of every client command's help that says how it reaches a mesh.
const connectHelp = `

It reaches a mesh in one of three ways:
  - beside "cotal up" (the default): through the data directory (--dir, COTAL_DIR, or the
    default data directory), minting a short-lived credential for itself;
  - anywhere: with --link (or COTAL_LINK), the join link "cotal up" prints, and --creds (or
    COTAL_CREDS), a .creds file from "cotal auth mint";
  - by a saved context: --context NAME, or without flags the one "cotal context select"
    chose (see "cotal context --help").
Exit codes: 0 success, 1 the command ran and failed, 2 the command line was wrong
("cotal help exit-codes").`

func addClientFlags(cmd *cobra.Command, f *clientFlags) {
	fs := cmd.Flags()
	addConfigFlags(fs)
	fs.StringVar(&f.link, "link", "", "join link of the mesh, e.g. cotal://127.0.0.1:4222/main (env "+envLink+")")
	fs.StringVar(&f.creds, "creds", "", ".creds file to connect with (env "+envCreds+")")
	fs.StringVar(&f.space, "space", "main", "space to use beside cotal up (a join link names its own)")
	fs.BoolVar(&f.asJSON, "json", false, "print JSON for scripts")
	_ = cmd.MarkFlagFilename("creds", "creds")
	_ = cmd.MarkFlagDirname("dir")
	addContextFlag(cmd)
	cmd.PreRunE = chainPreRun(cmd.PreRunE, func(*cobra.Command, []string) error {
		if f.link == "" {
			return nil
		}
		if _, err := wire.ParseLink(f.link); err != nil {
			return fmt.Errorf("--link: %w; pass the join link `cotal up` prints (`cotal link` shows it)", err)
		}
		return nil
	})
}

// addAdminFlags are the flags of a command that works only beside `cotal up`, through its
// admin socket.
func addAdminFlags(cmd *cobra.Command, asJSON *bool) {
	fs := cmd.Flags()
	addConfigFlags(fs)
	fs.BoolVar(asJSON, "json", false, "print JSON for scripts")
	_ = cmd.MarkFlagDirname("dir")
}

// chainPreRun runs first, then next, stopping at the first error.
func chainPreRun(first, next func(*cobra.Command, []string) error) func(*cobra.Command, []string) error {
	if first == nil {
		return next
	}
	return func(cmd *cobra.Command, args []string) error {
		if err := first(cmd, args); err != nil {
			return err
		}
		return next(cmd, args)
	}
}

// readCreds reads and checks the .creds file at path (SPEC §2: the identity it binds and
// the profile it was minted with; the key pair stays in the file bytes).
func readCreds(path string) ([]byte, endpoint.Credential, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, endpoint.Credential{}, fmt.Errorf("%w %s: %w; pass the file `cotal auth mint` wrote", errBadCreds, path, err)
	}
	c, err := endpoint.ParseCredential(data)
	if err != nil {
		return nil, endpoint.Credential{}, fmt.Errorf("%w %s: %w; mint a credential with `cotal auth mint`", errBadCreds, path, err)
	}
	if !c.Expires.IsZero() && time.Now().After(c.Expires) {
		return nil, endpoint.Credential{}, fmt.Errorf("%w %s: the credential of %q expired at %s; mint a new one with `cotal auth mint`",
			errBadCreds, path, c.Name, c.Expires.Format(time.RFC3339))
	}
	return data, c, nil
}

// session is how one client command reaches a mesh: a join link and the credential it
// connects with, from the flags, the environment, or minted through the admin socket.
type session struct {
	link   wire.Link
	raw    string // the join link text; it may carry a token, so it is never printed
	creds  []byte // nil: no credential (an open mesh)
	cred   endpoint.Credential
	mesh   *admin.Client // the admin client of a local mesh, nil for a remote one
	minted bool          // creds were minted for this command
	stderr io.Writer     // the command's, for waitFor
}

// mintFor says which credential a command mints for itself beside `cotal up`.
type mintFor struct {
	command  string
	profile  string   // agent or admin
	publish  []string // allowPublish of an agent credential
	lifetime time.Duration
}

// openSession resolves how the command reaches the mesh. With a link it connects there,
// with --creds or no credential at all (an open mesh); without one it asks the mesh on the
// data directory for its link and, unless --creds is given, mints a credential as want says.
// The link and the .creds file are linkAndCreds's.
func openSession(cmd *cobra.Command, f *clientFlags, want mintFor) (*session, error) {
	link, credsPath, err := linkAndCreds(cmd, f.link, f.creds)
	if err != nil {
		return nil, err
	}
	s := &session{raw: link, stderr: cmd.ErrOrStderr()}
	if credsPath != "" {
		var err error
		if s.creds, s.cred, err = readCreds(credsPath); err != nil {
			return nil, err
		}
	}
	if link != "" {
		l, err := wire.ParseLink(link)
		if err != nil {
			return nil, fmt.Errorf("%s: %w; set it to the join link `cotal up` prints", envLink, err)
		}
		s.link = l
		return s, s.checkSpace()
	}
	return s, s.openLocal(cmd, f.space, want)
}

// openLocal takes the link of the mesh on the data directory and mints a credential unless
// one was given.
func (s *session) openLocal(cmd *cobra.Command, spaceName string, want mintFor) error {
	dir, err := dataDir(cmd)
	if err != nil {
		return err
	}
	if s.mesh, err = meshClient(cmd, dir); err != nil {
		return err
	}
	link, err := s.mesh.Link(cmd.Context(), spaceName)
	if err != nil {
		return withHint(err)
	}
	if s.link, err = wire.ParseLink(link); err != nil {
		return fmt.Errorf("the mesh on %s gave the link %q: %w", dir, link, err)
	}
	s.raw = link
	if s.creds != nil {
		return nil
	}
	// Each command's identity has a name of its own: the mesh refuses a second active
	// credential under one name, and two commands may run at once.
	spec := admin.MintSpec{Space: spaceName, Name: "cli-" + want.command + "-" + userName() + "-" + strings.ToLower(rand.Text()[:6]),
		Profile: want.profile, AllowPublish: want.publish, ExpiresIn: want.lifetime,
		// The mesh gives every active agent its consumers; asking for them at mint creates them
		// before the mint returns, instead of in the reconciler's pass after it.
		// Nobody needs the row of a command's identity once it ends (session.close).
		ForgetOnRevoke: true}
	cred, err := s.mesh.Mint(cmd.Context(), spec)
	if errors.Is(err, space.ErrOpenMode) {
		return nil // an open mesh takes clients without a credential, with every permission
	}
	if err != nil {
		return fmt.Errorf("mint a credential for this command: %w", err)
	}
	s.creds, s.minted = cred.Creds, true
	s.cred, err = endpoint.ParseCredential(s.creds)
	return err
}

// close revokes a long-lived credential minted for this command, so it ends with the
// command; one-shot credentials simply expire.
func (s *session) close(want mintFor) {
	if !s.minted || want.lifetime <= oneShotLifetime {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.mesh.Revoke(ctx, s.link.Space, s.cred.ID)
}

// describe names the mesh and the identity connected to it, for messages: never the link's
// token or password. Connected without a credential, the mesh is an open one.
func (s *session) describe() string {
	if s.creds == nil {
		return s.where() + " on an open mesh"
	}
	return s.where() + fmt.Sprintf(" as %s (%s)", s.cred.Name, s.cred.Profile)
}

// where names the space and the address of the mesh.
func (s *session) where() string {
	return fmt.Sprintf("space %s at %s:%d", s.link.Space, s.link.Host, s.link.Port)
}

// checkSpace refuses a join link to another space than the credential's: its grants name
// only its own space (SPEC §3), so connecting would wait out a deadline and fail obscurely.
func (s *session) checkSpace() error {
	if s.creds == nil || s.cred.Space == "" || s.cred.Space == s.link.Space {
		return nil
	}
	return fmt.Errorf("%w: the credential of %q belongs to space %s, and the join link names space %s; "+
		"use the link of space %s (`cotal link --space %s` beside `cotal up` prints it)",
		errWrongSpace, s.cred.Name, s.cred.Space, s.link.Space, s.cred.Space, s.cred.Space)
}

// connectError says what a failed connection means and what to do about it.
func (s *session) connectError(err error) error {
	addr := fmt.Sprintf("%s:%d", s.link.Host, s.link.Port)
	msg := strings.ToLower(err.Error())
	switch {
	case strings.Contains(msg, "no servers available"), strings.Contains(msg, "connection refused"),
		strings.Contains(msg, "i/o timeout"), strings.Contains(msg, "no such host"):
		return fmt.Errorf("%w at %s (%v): check the join link, and that `cotal up` runs there", errUnreachable, addr, err)
	case strings.Contains(msg, "authorization violation"), strings.Contains(msg, "authentication"):
		if s.creds == nil {
			return fmt.Errorf("%w at %s: the mesh requires a credential; pass --creds with a file from `cotal auth mint`", errRefused, addr)
		}
		return fmt.Errorf("%w %s at %s (%v): it may be revoked, expired, or minted by another mesh; mint a new one with `cotal auth mint`",
			errRefused, s.cred.Name, addr, err)
	case errors.Is(err, endpoint.ErrNotProvisioned), errors.Is(err, context.DeadlineExceeded) && strings.Contains(msg, "cotal_presence_"):
		return fmt.Errorf("%w: the mesh at %s has no space %s, or the credential was minted by another mesh; "+
			"`cotal link` beside `cotal up` prints the link of each of its spaces", errWrongSpace, addr, s.link.Space)
	}
	who := "without a credential"
	if s.creds != nil {
		who = fmt.Sprintf("as %s (%s)", s.cred.Name, s.cred.Profile)
	}
	return fmt.Errorf("connect to %s %s: %w", s.where(), who, err)
}

// userName is the local user, sanitized into a routing token for credential names.
func userName() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		return "user"
	}
	return wire.Sanitize(name)
}

// newExitCodesTopic is the `cotal help exit-codes` topic.
func newExitCodesTopic() *cobra.Command {
	return &cobra.Command{
		Use:   "exit-codes",
		Short: "What cotal's exit codes mean",
		Long: `Every cotal command exits with:
  0  success (a streaming command such as "tail" or "who --watch" stopped with Ctrl-C
     also exits 0)
  1  the command ran and failed: no mesh running, the mesh unreachable or refusing the
     credential, a channel outside the credential's ACL, an unknown channel or instance,
     an unhealthy mesh for "status"; the message says what happened and what to do
  2  the command line was wrong (unknown command or flag, bad argument or flag value);
     nothing ran`,
	}
}
