package broker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Cluster joins the broker to a NATS cluster of cotal nodes: routes between the
// nodes, JetStream clustered (RAFT meta and stream groups), and account JWTs shared through
// nats-server's full NATS resolver instead of a memory one, so an account changed on one node
// reaches every node.
type Cluster struct {
	// Name is the cluster name every node shares.
	Name string
	// Listen is this node's route listener, "host:port"; port 0 picks a free one.
	Listen string
	// Routes are the route listeners ("host:port") of the cluster's nodes; this node's own may
	// be listed too, so every node can share one list.
	Routes []string
	// Secret is the password every node presents on the routes it dials and requires on the
	// routes it accepts; a route without it is closed before it carries anything. Required.
	Secret string
	// TLS, when set, makes every route TLS both ways: this node presents its Certificates
	// whichever side dialled, and requires and verifies the peer's against ClientCAs (RootCAs
	// too when it is nil), the dialling side also checking the peer's address (RouteTLS
	// builds one).
	TLS *tls.Config
}

// routeUser is the user name of the routes' password; nats-server compares both.
const routeUser = "cotal-route"

// resolverDir is where the full resolver keeps account JWTs, inside the store directory.
const resolverDir = "jwt"

// accountSync is how often the full resolver compares its accounts with the other nodes' and
// fetches what differs; updates themselves travel at once (UpdateAccount).
const accountSync = time.Minute

// validateCluster checks the cluster fields.
func (c Config) validateCluster() error {
	if c.Cluster == nil {
		return nil
	}
	if c.Cluster.Name == "" {
		return fmt.Errorf("Cluster.Name is empty: every node of a cluster shares one name")
	}
	if _, _, err := splitHostPort(c.Cluster.Listen); err != nil {
		return fmt.Errorf("Cluster.Listen %q: %w: use \"host:port\" for this node's route listener", c.Cluster.Listen, err)
	}
	for _, r := range c.Cluster.Routes {
		if _, _, err := splitHostPort(r); err != nil {
			return fmt.Errorf("Cluster.Routes entry %q: %w: use \"host:port\" of a node's route listener", r, err)
		}
	}
	if c.Cluster.Secret == "" {
		return fmt.Errorf("Cluster.Secret is empty: routes need the secret every node shares, or anyone who reaches the route listener joins the cluster")
	}
	if t := c.Cluster.TLS; t != nil && (len(t.Certificates) == 0 || t.ClientCAs == nil) {
		return fmt.Errorf("Cluster.TLS has no certificate or no ClientCAs: a route must present one and verify the peer's (see RouteTLS)")
	}
	if c.Listen == "" {
		return fmt.Errorf("Cluster is set but Listen is empty: nats-server routes only once the client listener is open, so a cluster node needs one")
	}
	if c.Open {
		return fmt.Errorf("Cluster is set together with Open: a cluster shares accounts through the operator's resolver, so it runs in operator mode only")
	}
	return nil
}

// clusterOptions sets the route listener and the routes. A cluster node opens its client
// listener at Start: nats-server starts routing only once that listener is open, and a
// clustered JetStream has no leader until the routes are up.
func clusterOptions(cfg Config, opts *server.Options) error {
	if cfg.Cluster == nil {
		return nil
	}
	host, port, err := splitHostPort(cfg.Cluster.Listen)
	if err != nil {
		return err
	}
	opts.Cluster = server.ClusterOpts{Name: cfg.Cluster.Name, Host: host, Port: randomIfZero(port),
		Username: routeUser, Password: cfg.Cluster.Secret}
	for _, r := range cfg.Cluster.Routes {
		opts.Routes = append(opts.Routes, &url.URL{Scheme: "nats", Host: r, User: url.UserPassword(routeUser, cfg.Cluster.Secret)})
	}
	if t := cfg.Cluster.TLS; t != nil {
		tc := t.Clone()
		tc.ClientAuth = tls.RequireAndVerifyClientCert
		if tc.RootCAs == nil {
			tc.RootCAs = tc.ClientCAs
		}
		opts.Cluster.TLSConfig = tc
	}
	opts.DontListen = false
	return nil
}

// RouteTLS is a route TLS configuration (Cluster.TLS) from PEM blocks: this node's
// certificate and key, and the CA that signed every node's certificate, which may be the
// certificate itself when every node shares one.
func RouteTLS(certPEM, keyPEM, caPEM []byte) (*tls.Config, error) {
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%w: the route certificate and key: %w", ErrTLS, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("%w: the route CA holds no PEM certificate", ErrTLS)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, ClientCAs: pool, RootCAs: pool}, nil
}

// newClusterResolver returns the full NATS resolver in the store's resolverDir, preloaded
// with every configured account JWT; accounts it lacks it fetches from the other nodes.
func newClusterResolver(storeDir string, accounts map[string]string) (*server.DirAccResolver, error) {
	r, err := server.NewDirAccResolver(filepath.Join(storeDir, resolverDir), 0, accountSync, server.NoDelete)
	if err != nil {
		return nil, fmt.Errorf("open the account resolver in %s: %w", storeDir, err)
	}
	for key, token := range accounts {
		if err := r.Store(key, token); err != nil {
			r.Close()
			return nil, fmt.Errorf("preload account %s: %w", key, err)
		}
	}
	return r, nil
}

// accountUpdateSubject is where nats-server's full resolvers take account JWT updates.
func accountUpdateSubject(account string) string {
	return "$SYS.REQ.ACCOUNT." + account + ".CLAIMS.UPDATE"
}

// pushAccount sends token to every node's resolver through the system account. The local
// server has the update already; a node that misses it fetches it at its next sync.
func (b *Broker) pushAccount(account, token string) error {
	if b.cfg.Cluster == nil || b.sys == nil {
		return nil
	}
	if err := b.sys.Publish(accountUpdateSubject(account), []byte(token)); err != nil {
		return fmt.Errorf("send account %s to the cluster: %w", account, err)
	}
	return b.sys.Flush()
}

// JetStreamReady waits until JetStream can take requests: at once on a single server; in a
// cluster, until the metadata group has a leader this node is current with, reporting
// through wait every few seconds while it waits. Streams of more replicas than there are
// nodes up are refused for a while after that; see space's provisioning.
func (b *Broker) JetStreamReady(ctx context.Context, wait func()) error {
	if b.cfg.Cluster == nil {
		return nil
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	report := time.Now().Add(2 * time.Second)
	for !b.srv.JetStreamIsCurrent() {
		if time.Now().After(report) {
			wait()
			report = time.Now().Add(5 * time.Second)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for the JetStream cluster's leader: %w", ctx.Err())
		case <-b.done:
			return fmt.Errorf("wait for the JetStream cluster's leader: %w", ErrClosed)
		case <-tick.C:
		}
	}
	return nil
}
