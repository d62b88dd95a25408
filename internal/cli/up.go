package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cotal-go/cotal/broker"
	"github.com/cotal-go/cotal/config"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/internal/cli/console"
	"github.com/cotal-go/cotal/internal/cli/launch"
	"github.com/cotal-go/cotal/internal/cli/manager"
	"github.com/cotal-go/cotal/internal/cli/supervisor"
	"github.com/cotal-go/cotal/internal/local"
	"github.com/cotal-go/cotal/space"
)

// upConfigFlags are the flags of `cotal up` that override config keys; only flags the user
// set are applied, so a flag's default never hides the file or the environment
// (config.LoadOptions).
var upConfigFlags = map[string]string{
	"dir": "dir", "listen": "listen", "http": "http", "http-public": "http_public", "space": "spaces",
	"tls-cert": "tls.cert", "tls-key": "tls.key", "sync": "sync", "open": "open",
	"log-format": "log.format", "log-level": "log.level",
	"cluster-name": "cluster.name", "cluster-listen": "cluster.listen", "cluster-peers": "cluster.peers",
	"server-name": "cluster.server_name", "cluster-trust": "cluster.trust",
	"cluster-backstop": "cluster.backstop", "cluster-tls-cert": "cluster.tls_cert", "cluster-tls-key": "cluster.tls_key",
	"cluster-tls-ca": "cluster.tls_ca",
	"leaf-listen":    "leaf.listen", "leaf-hub": "leaf.hub", "leaf-creds": "leaf.creds",
}

// dirConfigFlags are the config flags of every other command: they only locate the mesh, and
// their own flags (auth mint's --space names one credential's space) are not config keys.
var dirConfigFlags = map[string]string{"dir": "dir"}

// loadConfig loads space.Options from --config, the data directory, COTAL_* and those of the
// flags the user set on cmd that keys maps to config keys. Logs go to stderr, in the
// configured format and level, so stdout stays for results.
func loadConfig(cmd *cobra.Command, keys map[string]string) (space.Options, error) {
	overrides := map[string]any{}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		key, ok := keys[f.Name]
		if !ok {
			return
		}
		switch v := f.Value.(type) {
		case pflag.SliceValue:
			overrides[key] = v.GetSlice()
		default:
			overrides[key] = f.Value.String()
		}
	})
	for _, w := range config.UnknownEnv(os.Environ(), envLink, envCreds) {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
	}
	file, _ := cmd.Flags().GetString("config")
	cfg, err := config.Load(config.LoadOptions{File: file, Flags: overrides})
	if err != nil {
		return space.Options{}, cleanConfigError(err)
	}
	cfg.Logger = cfg.Log.Logger(cmd.ErrOrStderr())
	return cfg, nil
}

func addConfigFlags(f *pflag.FlagSet) {
	f.String("config", "", "configuration file (default: cotal.yaml in the data directory)")
	f.String("dir", "", "data directory (default: the user's data directory + /cotal)")
}

func newUpCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a mesh and run it until interrupted",
		Long: `up starts a cotal mesh: the embedded NATS server with JetStream and decentralized JWT
auth, every configured space provisioned, and the durable delivery loops. It prints the join
link and how to mint credentials, then runs until SIGINT or SIGTERM and shuts down cleanly.

With --leaf-listen the mesh is a hub that laptops' meshes join as NATS leaf nodes; with
--leaf-hub and --leaf-creds it is such a leaf itself: chat, DMs and presence cross the link
while it is up, and its own agents keep working while it is down (docs/leaf.md).`,
		Args:    cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error { return checkUpFlags(cmd) },
		RunE:    runUpOrCheck,
	}
	f := cmd.Flags()
	addConfigFlags(f)
	f.String("listen", "", "client listener host:port (default 127.0.0.1:4222)")
	f.StringSlice("space", nil, "space to provision (repeatable; default main)")
	f.String("http", "", "listener host:port on loopback for the web console, monitoring, /healthz and /metrics (default off)")
	f.Bool("http-public", false, "allow --http beyond loopback; identity endpoints still need the token in DIR/"+space.HTTPTokenFile)
	f.String("tls-cert", "", "TLS certificate (PEM) for the listener; links become cotals://")
	f.String("tls-key", "", "TLS private key (PEM) for the listener")
	f.String("sync", "", "JetStream durability: always (fsync every write, default) or interval")
	f.Bool("open", false, "unauthenticated dev mode: NO security, anyone who can connect can do anything")
	f.Bool("check", false, "validate the configuration, print a summary and exit without starting")
	f.String("cluster-name", "", "join a cluster of cotal nodes under this name (every node the same)")
	f.String("cluster-listen", "", "this node's route listener host:port, e.g. 127.0.0.1:6222")
	f.StringSlice("cluster-peers", nil, "every node's route listener host:port, this one's included (comma-separated or repeated)")
	f.String("server-name", "", "this node's name, unique in the cluster (default cotal-<route port>)")
	f.String("cluster-trust", "", "cluster-trust.json copied from the node that holds the key store (every other node)")
	f.String("cluster-backstop", "", "cluster-backstop.json copied from the node that holds the key store: this node may take over the durable backstop (secret, like a .creds file)")
	f.String("cluster-tls-cert", "", "this node's route certificate (PEM); required once routes leave loopback")
	f.String("cluster-tls-key", "", "this node's route private key (PEM)")
	f.String("cluster-tls-ca", "", "the CA (PEM) that signed every node's route certificate")
	f.String("leaf-listen", "", "be a hub: leaf node listener host:port that leaf meshes (laptops) connect to, e.g. 0.0.0.0:7422")
	f.String("leaf-hub", "", "be a leaf: the hub's leaf URL, e.g. nats-leaf://hub.example:7422 (tls://... for a hub with TLS)")
	f.StringSlice("leaf-creds", nil, "SPACE=FILE per space linked to the hub: the .creds the hub minted with --profile leaf (repeatable)")
	return cmd
}

// runUp starts in the order that makes "up" mean ready: the admin socket is bound first, so a
// command started meanwhile waits on it instead of reaching for the key store the mesh is
// about to lock; space.Start opens the client listener only once every space is provisioned
// and delivering; what a supervisor killed with SIGKILL left running is reaped
// (supervisor.Reap); the socket answers from then on, its agent routes run by a new
// supervisor; the banner comes last. On shutdown the supervised agents stop first, while the
// mesh can still revoke their credentials. The log speaks of
// agents by name (meshLog) and says who comes and goes (presenceLog). Before any of it, the
// listeners' ports are checked (checkPorts), so a port in use creates nothing in the data
// directory.
func runUp(cmd *cobra.Command, _ []string) error {
	cfg, err := loadConfig(cmd, upConfigFlags)
	if err != nil {
		return err
	}
	if err := checkPorts(cfg); err != nil {
		return err
	}
	if err := secureDir(cmd, cfg); err != nil {
		return err
	}
	srv, err := admin.Listen(cfg.Dir)
	if err != nil {
		return err
	}
	con, err := console.New()
	if err != nil {
		return errors.Join(err, closeAdmin(srv))
	}
	opts := cfg
	opts.Console = con
	logs := newMeshLog(opts.Logger.Handler())
	opts.Logger = slog.New(logs)
	m, err := space.Start(cmd.Context(), opts)
	if err != nil {
		return errors.Join(err, closeAdmin(srv))
	}
	logs.names.use(m)
	logs.rec.recovered(opts.Logger)
	var presence *presenceLog
	var sup *supervisor.Supervisor
	stopManager := func() {}
	shutdown := func() error {
		ctx, cancel := newTimeoutContext(30 * time.Second)
		defer cancel()
		var supErr error
		stopManager() // no agent is spawned while the supervisor stops them
		if sup != nil {
			supErr = sup.Close(ctx) // the agents stop while the mesh can still revoke them
		}
		presence.stop()
		return errors.Join(supErr, srv.Close(ctx), m.Close(ctx))
	}
	// Before the socket serves: what a killed supervisor left is ended first.
	var watch []admin.AgentWatch
	if !cfg.Open {
		if watch, err = supervisor.Reap(cmd.Context(), cfg.Dir, launch.Mesh{M: m}, opts.Logger); err != nil {
			opts.Logger.Error("reap the agents the last supervisor left", "err", err)
		}
	}
	presence, err = startPresenceLog(cmd.Context(), m, opts.Logger, cfg.Open)
	if err != nil {
		return errors.Join(err, shutdown())
	}
	sup = supervisor.New(supervisor.Options{Dir: cfg.Dir, Mesh: m, Log: opts.Logger, Presence: presence.presence,
		Watch: watch})
	srv.Supervise(sup)
	con.ShowAgents(sup)
	if !cfg.Open {
		stopManager = manager.Run(cmd.Context(), m, sup, opts.Logger)
	}
	srv.Serve(m, opts.Logger)
	consoleURL, err := startConsole(cmd.Context(), con, m)
	if err != nil {
		return errors.Join(err, shutdown())
	}
	printBanner(cmd.OutOrStdout(), m, cfg, consoleURL)
	runErr := runMesh(cmd.Context(), m)
	if runErr == nil {
		fmt.Fprintln(cmd.OutOrStdout(), "shutting down")
	}
	if closeErr := shutdown(); runErr == nil {
		return closeErr
	}
	return runErr
}

// startConsole serves the web console when the mesh has an HTTP listener, and returns the URL
// that opens it ("" without a listener).
func startConsole(ctx context.Context, con *console.Console, m *space.Mesh) (string, error) {
	u := m.HTTPURL()
	if u == "" {
		return "", nil
	}
	if err := con.Start(ctx, m); err != nil {
		return "", err
	}
	return con.URL(u), nil
}

// secureDir makes the data directory the user's alone before the admin socket and the key
// store are put in it (local.SecureDir), and warns when it had to narrow it.
func secureDir(cmd *cobra.Command, cfg space.Options) error {
	was, err := local.SecureDir(cfg.Dir)
	if err != nil {
		return err
	}
	if was != 0 {
		cfg.Logger.Warn(narrowedDir, "dir", cfg.Dir, "was", fmt.Sprintf("%04o", was))
	}
	return nil
}

// warnSecureDir is secureDir for commands that do not log: the warning is a line on stderr.
func warnSecureDir(cmd *cobra.Command, dir string) error {
	was, err := local.SecureDir(dir)
	if err != nil {
		return err
	}
	if was != 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s (%s was mode %04o)\n", narrowedDir, dir, was)
	}
	return nil
}

// narrowedDir is the warning for a data directory SecureDir narrowed.
const narrowedDir = "the data directory was writable by other users; narrowed it to 0700: check that its files are yours"

// runMesh runs until ctx ends (SIGINT, SIGTERM), which is a clean stop, or the mesh dies
// underneath, which is an error naming the cause.
func runMesh(ctx context.Context, m *space.Mesh) error {
	select {
	case <-ctx.Done():
		return nil
	case <-m.Done():
		if err := m.Err(); err != nil {
			return fmt.Errorf("the mesh stopped: %w", err)
		}
		return nil
	}
}

// printClusterBanner says which cluster the node is part of and how the others join it.
func printClusterBanner(w io.Writer, m *space.Mesh, cfg space.Options) {
	c := cfg.Cluster
	if c.Name == "" {
		return
	}
	replicas := "R1 (fewer than 3 peers)"
	if len(c.Peers) >= 3 {
		replicas = "R3"
	}
	fmt.Fprintf(w, "  cluster:  %s, node %s, route %s, %d peers, streams %s\n", c.Name, m.Info().Node, c.Listen, len(c.Peers), replicas)
	if c.Trust == "" {
		fmt.Fprintf(w, "  every other node starts with --cluster-trust %s (copy it there as you would a .creds file: it holds the route secret)\n", filepath.Join(m.Dir(), space.TrustFile))
		fmt.Fprintf(w, "  and, to take over the durable backstop if this node dies, --cluster-backstop %s (copy it as you would a .creds file)\n", filepath.Join(m.Dir(), space.BackstopFile))
	}
}

// printLeafBanner says which side of a leaf link the mesh is, and how a laptop joins a hub.
func printLeafBanner(w io.Writer, m *space.Mesh, cfg space.Options) {
	l := cfg.Leaf
	switch {
	case l.Listen != "":
		fmt.Fprintf(w, "  leaf:     hub; leaf meshes connect to %s\n", m.Info().LeafURL)
		fmt.Fprintf(w, "  a laptop's link credential, per space (keep it secret, like a .creds file):\n    cotal auth mint --dir %s --profile leaf --name laptop --no-expiry --out laptop-leaf.creds\n", m.Dir())
	case l.Hub != "":
		fmt.Fprintf(w, "  leaf:     leaf of %s, spaces %s (agents here keep working while it is unreachable; cotal status shows the link)\n",
			l.Hub, strings.Join(slices.Sorted(maps.Keys(l.Creds)), ", "))
	}
}

func closeAdmin(srv *admin.Server) error {
	ctx, cancel := newTimeoutContext(5 * time.Second)
	defer cancel()
	return srv.Close(ctx)
}

// syncLine says in one line how durable acknowledged writes are under mode.
func syncLine(mode broker.SyncMode, every time.Duration) string {
	if mode == broker.SyncInterval {
		return fmt.Sprintf("sync: every %v (fsync in the background: a power failure can lose the last %v of acknowledged writes; faster)",
			every, every)
	}
	return "sync: always (fsync on every write: nothing acknowledged is lost on power failure; slower)"
}

func printBanner(w io.Writer, m *space.Mesh, cfg space.Options, consoleURL string) {
	if cfg.Open {
		fmt.Fprintln(w, "!!! OPEN MODE: authentication is OFF. Anyone who can reach the listener can read and")
		fmt.Fprintln(w, "!!! write everything. Use only on a machine you alone use, never on a network.")
	}
	fmt.Fprintln(w, "cotal mesh is up")
	spaces := m.Spaces()
	if cfg.Cluster.Trust != "" {
		spaces = cfg.Spaces // provisioned by the node that holds the key store
	}
	for _, s := range spaces {
		link, err := m.Link(s)
		if err != nil {
			link = err.Error()
		}
		fmt.Fprintf(w, "  space %-10s join link: %s\n", s, link)
	}
	fmt.Fprintf(w, "  data dir: %s\n", m.Dir())
	if cfg.Open {
		fmt.Fprintln(w, "  auth:     OFF (open mode)")
	} else {
		fmt.Fprintln(w, "  auth:     decentralized JWT (operator mode); every client needs a .creds file")
	}
	fmt.Fprintf(w, "  %s\n", syncLine(cfg.Sync, cfg.SyncInterval))
	if u := m.HTTPURL(); u != "" {
		fmt.Fprintf(w, "  health:   %s/healthz   metrics: %s/metrics   monitoring: %s/varz\n", u, u, u)
		fmt.Fprintf(w, "  /connz /accountz /subsz /accstatz /jsz need: Authorization: Bearer $(cat %s)\n", filepath.Join(m.Dir(), space.HTTPTokenFile))
	}
	if consoleURL != "" {
		fmt.Fprintf(w, "  console:  %s\n", consoleURL)
	}
	printClusterBanner(w, m, cfg)
	printLeafBanner(w, m, cfg)
	if cfg.Cluster.Trust != "" {
		fmt.Fprintln(w, "mint credentials on the node that holds the key store (the one that wrote the trust file)")
	} else if !cfg.Open {
		fmt.Fprintf(w, "mint a credential in another terminal:\n  cotal auth mint --dir %s --profile agent --name alice --subscribe general --allow-publish general\n", m.Dir())
	}
	fmt.Fprintln(w, "press Ctrl-C to stop")
}
