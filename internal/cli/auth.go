package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nkeys"
	"github.com/spf13/cobra"

	"github.com/cotal-go/cotal/config"
	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

func newAuthCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "auth",
		Short: "Mint, list and revoke credentials",
		Long: `auth manages the credentials of a mesh's spaces. While "cotal up" runs on the data
directory it goes through the running mesh's admin socket; otherwise it opens the key store
directly. A mesh still starting (or stopping) holds the key store without answering yet: auth
then waits up to 10s for it, and says so on stderr.`,
	}
	cmd.AddCommand(newMintCmd(), newListCmd(), newRevokeCmd())
	return cmd
}

func newMintCmd() *cobra.Command {
	var spec admin.MintSpec
	var out, expiresIn, expiresAt, identity string
	var asJSON, force bool
	cmd := &cobra.Command{
		Use:   "mint --profile agent|observer|admin|leaf --name NAME",
		Short: "Mint a credential and write it as a .creds file (mode 0600)",
		Args:  cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkProfile(cmd, spec.Profile); err != nil {
				return err
			}
			return mintTimes(&spec, expiresIn, expiresAt)
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if identity != "" {
				seed, err := readIdentitySeed(identity)
				if err != nil {
					return err
				}
				spec.IdentitySeed = seed
			}
			return runMint(cmd, spec, out, force, asJSON)
		},
	}
	f := cmd.Flags()
	addConfigFlags(f)
	f.StringVar(&spec.Profile, "profile", wire.ProfileAgent, "agent, observer, admin, or leaf (a leaf mesh's link to this hub, cotal up --leaf-creds)")
	f.StringVar(&spec.Name, "name", "", "display name of the instance (required)")
	f.StringVar(&spec.Space, "space", "main", "space of the credential")
	f.StringVar(&spec.Role, "role", "", "anycast role the agent serves (agent only)")
	f.StringSliceVar(&spec.Subscribe, "subscribe", nil, "channels joined at boot (agent only)")
	f.StringSliceVar(&spec.AllowSubscribe, "allow-subscribe", nil, "read ACL, default = --subscribe (agent only)")
	f.StringSliceVar(&spec.AllowPublish, "allow-publish", nil, "channels the agent may post to; default none (agent only)")
	f.Bool("provision", true, "no effect: a running mesh creates an agent's consumers at mint, an offline one at its next start")
	_ = f.MarkDeprecated("provision", "a running mesh creates an agent's consumers at mint; drop the flag")
	f.StringVar(&out, "out", "", "where to write the .creds file (default ./NAME.creds)")
	f.StringVar(&expiresIn, "expires-in", "", "lifetime: "+durationUnits+" (default: config key expiry, 24h unless set)")
	f.StringVar(&expiresAt, "expires-at", "", "absolute expiry, RFC 3339 (e.g. 2027-01-02T15:04:05Z)")
	f.BoolVar(&spec.NoExpiry, "no-expiry", false, "never expires; only revocation ends it")
	f.BoolVar(&spec.Replace, "replace", false, "revoke the active credential that already carries --name, and mint this one in its place")
	f.StringVar(&identity, "identity", "", "re-mint for the nkey in this .creds file (revokes its previous credential)")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	f.BoolVar(&force, "force", false, "replace an existing file at --out")
	f.Bool("init", false, "create a key store in a data directory no mesh has used yet, for a mesh started there later")
	_ = cmd.MarkFlagRequired("name")
	cmd.MarkFlagsMutuallyExclusive("expires-in", "expires-at", "no-expiry")
	return cmd
}

// mintTimes parses --expires-in (parseDuration) and --expires-at.
func mintTimes(spec *admin.MintSpec, in, at string) error {
	if in != "" {
		d, err := parseDuration(in)
		if err != nil {
			return fmt.Errorf("--expires-in %q: %w", in, err)
		}
		spec.ExpiresIn = d
	}
	if at != "" {
		t, err := time.Parse(time.RFC3339, at)
		if err != nil {
			return fmt.Errorf("--expires-at %q: use RFC 3339, e.g. 2027-01-02T15:04:05Z", at)
		}
		spec.ExpiresAt = t
	}
	return nil
}

// agentOnlyFlags are mint's flags that carry grants or a role, which only an agent credential
// takes.
var agentOnlyFlags = []string{"subscribe", "allow-subscribe", "allow-publish", "role"}

// checkProfile refuses a --profile that is not one a credential can be minted with, and the
// agent-only flags with another profile. The mint refuses those values too
// (provisioner.ErrGrantsNotAllowed), but only here are they known by their flags.
func checkProfile(cmd *cobra.Command, p string) error {
	switch provisioner.Profile(p) {
	case provisioner.ProfileAgent:
		return nil
	case provisioner.ProfileObserver, provisioner.ProfileAdmin, provisioner.ProfileLeaf:
	default:
		return fmt.Errorf("--profile %q: use agent, observer, admin or leaf", p)
	}
	var set []string
	for _, name := range agentOnlyFlags {
		if cmd.Flags().Changed(name) {
			set = append(set, "--"+name)
		}
	}
	if len(set) == 0 {
		return nil
	}
	return fmt.Errorf("--profile %s takes no %s: channel grants and a role apply only to the agent profile",
		p, strings.Join(set, ", "))
}

func readIdentitySeed(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--identity: %w", err)
	}
	seed, err := endpoint.CredentialSeed(data)
	if err != nil {
		return "", fmt.Errorf("--identity %s: %w", path, err)
	}
	return seed, nil
}

// runMint checks the output path first, so a credential is minted only when its file can be
// written; should the write fail anyway, the credential is revoked, so no active registry entry
// is left whose seed nobody has.
func runMint(cmd *cobra.Command, spec admin.MintSpec, out string, force, asJSON bool) error {
	opts, err := loadConfig(cmd, dirConfigFlags)
	if err != nil {
		return err
	}
	if out == "" {
		out = filepath.Clean(spec.Name + ".creds")
	}
	if err := checkCredsOut(out, force); err != nil {
		return err
	}
	dir := opts.Dir
	if initStore, _ := cmd.Flags().GetBool("init"); !initStore {
		if err := checkMintDir(cmd.Context(), cmd.ErrOrStderr(), dir); err != nil {
			return err
		}
	}
	var cred *admin.MintedCredential
	err = withMeshOrStore(cmd, dir, func(c *admin.Client) (err error) {
		cred, err = c.Mint(cmd.Context(), spec)
		return err
	}, func(s *provisioner.Store) (err error) {
		cred, err = admin.MintInStore(s, withDefaultExpiry(spec, opts.Expiry))
		return err
	})
	if err != nil {
		return err
	}
	if err := provisioner.WriteSecretFile(out, cred.Creds); err != nil {
		cause := errors.Unwrap(err) // WriteSecretFile wraps the cause, which may name its temporary file
		if cause == nil {
			cause = err
		}
		werr := fmt.Errorf("%w to %s: %w", errCredsOut, out, pathCause(cause))
		if rerr := revokeMinted(cmd, dir, cred); rerr != nil {
			return fmt.Errorf("%w; revoking the unwritten credential %s failed too: %w", werr, cred.ID, rerr)
		}
		return fmt.Errorf("%w; the credential was revoked, nothing was minted", werr)
	}
	return printMinted(cmd, cred, out, asJSON)
}

// checkMintDir refuses to mint into a data directory that holds no key store, no mesh's
// socket and no cotal.yaml unless --init says so: most often --dir is mistyped, and a key
// store created there would sign a credential that no mesh trusts.
//
// A mesh started a moment before (`cotal up --dir D &` then a mint on D, as the recipes of
// docs/cluster.md and docs/leaf.md run) may not have written its key store yet, so the check
// waits up to mintDirWait for one to appear before it refuses.
func checkMintDir(ctx context.Context, stderr io.Writer, dir string) error {
	if err := checkNotMember(dir); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, config.FileName)); err == nil {
		return nil // a directory set up for a mesh
	}
	if err := awaitMeshData(ctx, stderr, dir); err != nil {
		return fmt.Errorf("%w in %s: no mesh has run there and nothing was minted there, so no mesh would accept "+
			"the credential; check --dir, start `cotal up --dir %s` first, or pass --init to create a key store "+
			"there for a mesh you start later", errNoMeshData, dir, dir)
	}
	return nil
}

// mintDirWait is how long a mint waits for a mesh starting in its --dir to write its data.
const mintDirWait = 5 * time.Second

// awaitMeshData is checkMeshData, asked again every 100 ms until mintDirWait passes, saying
// once after a second what it waits for.
func awaitMeshData(ctx context.Context, stderr io.Writer, dir string) error {
	ctx, cancel := context.WithTimeout(ctx, mintDirWait)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	said := time.Now().Add(time.Second)
	for {
		err := checkMeshData(dir)
		if err == nil {
			return nil
		}
		if !said.IsZero() && time.Now().After(said) {
			fmt.Fprintf(stderr, "waiting up to %v for a mesh starting in %s...\n", mintDirWait, dir)
			said = time.Time{}
		}
		select {
		case <-ctx.Done():
			return err
		case <-tick.C:
		}
	}
}

// revokeMinted revokes a credential whose file could not be written.
func revokeMinted(cmd *cobra.Command, dir string, cred *admin.MintedCredential) error {
	return withMeshOrStore(cmd, dir, func(c *admin.Client) error {
		return c.Revoke(cmd.Context(), cred.Space, cred.ID)
	}, func(s *provisioner.Store) error {
		_, err := s.Revoke(cred.Space, cred.ID)
		return err
	})
}

// withDefaultExpiry gives spec the configured lifetime when it names no expiry of its own. Only
// the offline path needs it: a running mesh applies the expiry of the configuration it was
// started with, as the process holding the key store.
func withDefaultExpiry(spec admin.MintSpec, expiry time.Duration) admin.MintSpec {
	if spec.ExpiresIn == 0 && spec.ExpiresAt.IsZero() && !spec.NoExpiry {
		spec.ExpiresIn = expiry
	}
	return spec
}

// mintedJSON is the --json form of a minted credential: where the file is, never its content.
type mintedJSON struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Space       string    `json:"space"`
	Profile     string    `json:"profile"`
	Role        string    `json:"role,omitempty"`
	ExpiresAt   time.Time `json:"expiresAt,omitzero"`
	Provisioned bool      `json:"provisioned"`
	File        string    `json:"file"`
}

func printMinted(cmd *cobra.Command, cred *admin.MintedCredential, out string, asJSON bool) error {
	w := cmd.OutOrStdout()
	if asJSON {
		return json.NewEncoder(w).Encode(mintedJSON{ID: cred.ID, Name: cred.Name, Space: cred.Space,
			Profile: cred.Profile, Role: cred.Role, ExpiresAt: cred.ExpiresAt, Provisioned: cred.Provisioned, File: out})
	}
	fmt.Fprintf(w, "%s\n", cred.ID)
	expiry := "never"
	if !cred.ExpiresAt.IsZero() {
		expiry = cred.ExpiresAt.Format(time.RFC3339)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "minted %s %q in space %s, expires %s; credentials written to %s (mode 0600)\n",
		cred.Profile, cred.Name, cred.Space, expiry, out)
	if !cred.Provisioned && cred.Profile == string(provisioner.ProfileAgent) {
		fmt.Fprintln(cmd.ErrOrStderr(), "its DM and durable-copy consumers are created when the mesh next starts")
	}
	return nil
}

func newListCmd() *cobra.Command {
	var spaceName string
	var asJSON, all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the credentials minted in a space",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := dataDir(cmd)
			if err != nil {
				return err
			}
			recs, err := listCredentials(cmd, dir, spaceName)
			if err != nil {
				return err
			}
			shown := visibleCredentials(recs, all)
			if hidden := len(recs) - len(shown); hidden > 0 && !asJSON {
				fmt.Fprintf(cmd.ErrOrStderr(), "%d short-lived %s of cotal's own commands hidden; --all shows them\n",
					hidden, plural(uint64(hidden), "credential", "credentials"))
			}
			recs = shown
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(recs)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tPROFILE\tROLE\tEXPIRES\tSTATE")
			for _, r := range recs {
				row(tw, r.ID, r.Name, string(r.Profile), r.Grants.Role, expiryText(r.ExpiresAt), stateText(r))
			}
			return tw.Flush()
		},
	}
	addConfigFlags(cmd.Flags())
	cmd.Flags().StringVar(&spaceName, "space", "main", "space to list")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&all, "all", false, allHelp)
	return cmd
}

func listCredentials(cmd *cobra.Command, dir, spaceName string) ([]space.CredentialInfo, error) {
	var recs []space.CredentialInfo
	err := withMeshOrExistingStore(cmd, dir, spaceName, func(c *admin.Client) (err error) {
		recs, err = c.Credentials(cmd.Context(), spaceName)
		return err
	}, func(s *provisioner.Store) (err error) {
		recs, err = s.List(spaceName)
		return err
	})
	return recs, err
}

func expiryText(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Format(time.RFC3339)
}

func stateText(r space.CredentialInfo) string {
	switch {
	case r.Revoked:
		return "revoked"
	case !r.Active(time.Now()):
		return "expired"
	}
	return "active"
}

func newRevokeCmd() *cobra.Command {
	var spaceName string
	cmd := &cobra.Command{
		Use:   "revoke ID|NAME",
		Short: "Revoke a credential: connected clients are cut off at once",
		Long: `revoke ends a credential, named by its instance id or by the name it was minted with.
A name held by more than one active credential is refused with their ids; revoke one of
them by id ("cotal auth list" shows them).`,
		Args: exactArgs("ID|NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := dataDir(cmd)
			if err != nil {
				return err
			}
			id, err := credentialID(cmd, dir, spaceName, args[0])
			if err != nil {
				return err
			}
			err = withMeshOrExistingStore(cmd, dir, spaceName, func(c *admin.Client) error {
				return c.Revoke(cmd.Context(), spaceName, id)
			}, func(s *provisioner.Store) error {
				_, err := s.Revoke(spaceName, id)
				return err
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "revoked %s\n", id)
			return nil
		},
	}
	addConfigFlags(cmd.Flags())
	cmd.Flags().StringVar(&spaceName, "space", "main", "space of the credential")
	return cmd
}

// credentialID is who as an instance id: itself when it is one, else the id of the one active
// credential minted with that name.
func credentialID(cmd *cobra.Command, dir, spaceName, who string) (string, error) {
	if nkeys.IsValidPublicUserKey(who) {
		return who, nil
	}
	recs, err := listCredentials(cmd, dir, spaceName)
	if err != nil {
		return "", err
	}
	var ids []string
	for _, r := range recs {
		if r.Name == who && r.Active(time.Now()) {
			ids = append(ids, r.ID)
		}
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("no active credential is named %q in space %s; `cotal auth list` shows them", who, spaceName)
	case 1:
		return ids[0], nil
	}
	return "", fmt.Errorf("%d active credentials are named %q in space %s: %s; revoke one by id",
		len(ids), who, spaceName, strings.Join(ids, ", "))
}

// dataDir resolves the data directory the way `cotal up` does, through loadConfig, from
// --config, --dir and COTAL_DIR only: a command's other flags are not configuration keys.
func dataDir(cmd *cobra.Command) (string, error) {
	opts, err := loadConfig(cmd, dirConfigFlags)
	return opts.Dir, err
}
