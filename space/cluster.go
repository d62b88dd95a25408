package space

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cotal-go/cotal/broker"
	"github.com/cotal-go/cotal/internal/local"
	"github.com/cotal-go/cotal/provisioner"
)

// ClusterOptions make the mesh one node of a NATS cluster of cotal nodes; the koanf tags are
// the keys of the cluster section of cotal.yaml, all empty by default. One
// node holds the key store: it mints and revokes, provisions every space's streams and
// buckets, and runs the durable backstop. The others start from its cluster trust file
// (Trust, written as DIR/cluster-trust.json by that node) and hold no keys: they serve agents
// and replicate the streams, and every account reaches them through the cluster's account
// resolver.
type ClusterOptions struct {
	// Name is the cluster name every node shares; empty runs the mesh alone.
	Name string `koanf:"name"`
	// Listen is this node's route listener "host:port".
	Listen string `koanf:"listen"`
	// Peers are the route listeners of every node, this one included: the same list on each
	// node. Three or more make every stream and bucket R3; fewer keep them R1.
	Peers []string `koanf:"peers"`
	// ServerName names this node, unique in the cluster; default "cotal-" + Listen's port.
	ServerName string `koanf:"server_name"`
	// Trust is the cluster trust file of the node that holds the key store; set on every
	// other node.
	Trust string `koanf:"trust"`
	// Backstop is the cluster backstop file of the node that holds the key store (written as
	// DIR/cluster-backstop.json, BackstopFile), copied beside Trust. With it this node may take
	// over each space's durable backstop when the node running it dies; without it, it never
	// runs one. Set only with Trust.
	Backstop string `koanf:"backstop"`
	// TLSCert and TLSKey are this node's certificate and key for its routes, and TLSCA the CA
	// that signed every node's; all three or none, and the same choice on every node. Without
	// them routes run TLS with the certificate the trust file carries, which is valid for
	// loopback addresses only: a node whose Listen or any of whose Peers is not a loopback
	// address refuses to start without them.
	TLSCert string `koanf:"tls_cert"`
	TLSKey  string `koanf:"tls_key"`
	TLSCA   string `koanf:"tls_ca"`
}

// ErrRouteTLS is returned by Start for a cluster node whose routes would leave this machine
// without TLS.
var ErrRouteTLS = errors.New("cluster routes leave this machine without TLS")

// TrustFile is the name of the cluster trust file the key-store node writes in its data
// directory at start.
const TrustFile = "cluster-trust.json"

// ErrNoKeyStore is returned by what needs the key store on a cluster node started from a trust
// file: minting, revoking, in-process Endpoints, channel settings. The error names the node
// that holds it when the trust file does.
var ErrNoKeyStore = errors.New("this cluster node holds no key store")

// validateCluster checks the cluster options a mesh cannot start without; the broker checks
// the addresses.
func (o Options) validateCluster() error {
	c := o.Cluster
	switch {
	case !o.clustered() && (c.Listen != "" || len(c.Peers) > 0 || c.Trust != "" || c.Backstop != ""):
		return fmt.Errorf("cluster settings without a cluster name: set the cluster name every node shares, or drop the cluster settings")
	case !o.clustered():
		return nil
	case o.Open:
		return fmt.Errorf("a cluster runs in operator mode only: drop open, or the cluster settings")
	case o.Listen == "":
		return fmt.Errorf("a cluster node needs a client listener (listen): nats-server routes only once it is open")
	case c.Listen == "":
		return fmt.Errorf("the cluster listener (cluster.listen) is empty: set this node's route host:port")
	case len(c.Peers) == 0:
		return fmt.Errorf("the cluster peers (cluster.peers) are empty: list every node's route host:port, this one's included")
	case c.Backstop != "" && c.Trust == "":
		return fmt.Errorf("the cluster backstop file (cluster.backstop) is set on the node with the key store, which writes it: set it only on the other nodes, beside cluster.trust")
	}
	return c.checkRouteTLS()
}

// checkRouteTLS applies the loopback rule (local.IsLoopback) to the route listener and
// the peers: a route that leaves the machine carries the space in plain text, and the route
// secret with it, unless it has TLS.
func (c ClusterOptions) checkRouteTLS() error {
	if (c.TLSCert == "") != (c.TLSKey == "") || (c.TLSCert == "") != (c.TLSCA == "") {
		return fmt.Errorf("the route TLS files are set in part: give cluster.tls_cert, cluster.tls_key and cluster.tls_ca together, or none")
	}
	if c.TLSCert != "" {
		return nil
	}
	for _, addr := range append([]string{c.Listen}, c.Peers...) {
		if !local.IsLoopback(addr) {
			return fmt.Errorf("%w: %s is not a loopback address; give every node a route certificate (cluster.tls_cert, "+
				"cluster.tls_key) and the CA that signed them all (cluster.tls_ca), or keep every node on 127.0.0.1", ErrRouteTLS, addr)
		}
	}
	return nil
}

// ErrStandaloneStore is returned by Start when a cluster node's data directory holds the
// JetStream store of a mesh that ran alone: clustered JetStream would not see those streams
// (it creates new replicated ones beside them), so their messages would be hidden, not moved.
var ErrStandaloneStore = errors.New("the data directory holds the streams of a mesh that ran alone")

// checkClusterStore refuses a cluster node on a data directory whose JetStream store has
// streams but no cluster metadata: a standalone mesh's store.
func (m *Mesh) checkClusterStore() error {
	if !m.opts.clustered() || m.opts.Memory {
		return nil
	}
	root := filepath.Join(m.dir, "jetstream", "jetstream")
	streams, _ := filepath.Glob(filepath.Join(root, "*", "streams"))
	meta, _ := filepath.Glob(filepath.Join(root, "*", "_js_", "_meta_"))
	if len(streams) == 0 || len(meta) > 0 {
		return nil
	}
	return fmt.Errorf("%w (%s): start a cluster node on an empty data directory, and keep this one for the standalone mesh, or move its messages with a stream backup and restore", ErrStandaloneStore, m.dir)
}

// clustered reports whether the mesh is a cluster node.
func (o Options) clustered() bool { return o.Cluster.Name != "" }

// member reports whether the mesh is a cluster node without the key store.
func (o Options) member() bool { return o.Cluster.Trust != "" }

// replicas is how many copies each stream and bucket keeps: three in a cluster of three or
// more nodes, else one.
func (o Options) replicas() int {
	if len(o.Cluster.Peers) >= 3 {
		return 3
	}
	return 1
}

// clusterConfig fills c's cluster fields: the routes, their secret and TLS from the trust
// file's material (the key store's on its own node). The key-store node writes the trust and
// backstop files; the broker sends account changes from it to the other nodes as the system
// user capIdentities gave it.
func (m *Mesh) clusterConfig(c *broker.Config) error {
	cl := m.opts.Cluster
	c.ServerName = cl.ServerName
	t := m.clusterTrust
	if m.store != nil {
		var err error
		if t, err = m.store.ClusterTrust(); err != nil {
			return err
		}
		t.KeyStoreNode = cl.ServerName
		if err := provisioner.WriteClusterTrust(filepath.Join(m.dir, TrustFile), t); err != nil {
			return err
		}
	}
	tc, err := cl.routeTLS(t)
	if err != nil {
		return err
	}
	c.Cluster = &broker.Cluster{Name: cl.Name, Listen: cl.Listen, Routes: cl.Peers, Secret: t.RouteSecret, TLS: tc}
	if m.store == nil {
		return nil
	}
	return m.keyStoreBackstop()
}

// routeTLS is the routes' TLS: from the route TLS files when they are set, else the trust
// material's shared certificate, its own CA.
func (c ClusterOptions) routeTLS(t provisioner.ClusterTrust) (*tls.Config, error) {
	if c.TLSCert == "" {
		return broker.RouteTLS([]byte(t.RouteCert), []byte(t.RouteKey), []byte(t.RouteCert))
	}
	var pems [3][]byte
	for i, f := range []string{c.TLSCert, c.TLSKey, c.TLSCA} {
		var err error
		if pems[i], err = os.ReadFile(f); err != nil {
			return nil, fmt.Errorf("read the route TLS file: %w", err)
		}
	}
	return broker.RouteTLS(pems[0], pems[1], pems[2])
}

// trustPoll is how often a node started before its trust file exists looks for it again.
const trustPoll = 200 * time.Millisecond

// awaitTrustFile waits, on a node started from a trust file, until the file and the backstop
// file it was given exist, saying once what it waits for: nodes started together (as a
// script starts them) start before the key-store node has written them. ctx bounds the wait.
func (m *Mesh) awaitTrustFile(ctx context.Context) error {
	var files []string
	for _, f := range []string{m.opts.Cluster.Trust, m.opts.Cluster.Backstop} {
		if f != "" {
			files = append(files, f)
		}
	}
	tick := time.NewTicker(trustPoll)
	defer tick.Stop()
	logged := ""
	for len(files) > 0 {
		if _, err := os.Stat(files[0]); !errors.Is(err, os.ErrNotExist) {
			files = files[1:]
			continue
		}
		if logged != files[0] {
			logged = files[0]
			m.log.Info("waiting for a cluster file: the node that holds the key store writes it at start; "+
				"copy it here once it has, if this node runs on another machine", "file", files[0])
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the cluster file %s never appeared: %w: start the node that holds the key store "+
				"first, and copy its %s and %s here", files[0], ctx.Err(), TrustFile, BackstopFile)
		case <-tick.C:
		}
	}
	return nil
}

// memberTrust is the trust chain of a node started from a trust file. The node keeps a copy
// in its data directory: it marks the directory as a member's, so that a command run on it
// while the node is down refuses to create a key store there, and names the node that holds
// the real one (NoKeyStoreError).
func (m *Mesh) memberTrust() (provisioner.Trust, error) {
	t, err := provisioner.ReadClusterTrust(m.opts.Cluster.Trust)
	if err != nil {
		return provisioner.Trust{}, err
	}
	m.keyStoreNode, m.clusterTrust = t.KeyStoreNode, t
	if own := filepath.Join(m.dir, TrustFile); !sameFile(own, m.opts.Cluster.Trust) {
		if err := provisioner.WriteClusterTrust(own, t); err != nil {
			return provisioner.Trust{}, err
		}
	}
	return t.Trust()
}

// sameFile reports whether a and b name one file; false when either cannot be read.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// awaitCluster waits until the JetStream cluster has a leader, logging while it waits.
func (m *Mesh) awaitCluster(ctx context.Context) error {
	if !m.opts.clustered() {
		return nil
	}
	want := m.opts.replicas()
	m.log.Info("cluster node started", "cluster", m.opts.Cluster.Name, "server", m.opts.Cluster.ServerName,
		"replicas", want, "key_store", !m.opts.member())
	return m.broker.JetStreamReady(ctx, func() {
		m.log.Info("waiting for the JetStream cluster to elect a leader: start the other nodes", "nodes", len(m.opts.Cluster.Peers))
	})
}

// noStore is the error of a credential operation on a mesh without a key store.
func (m *Mesh) noStore() error {
	if m.opts.member() {
		return NoKeyStoreError(m.keyStoreNode)
	}
	return ErrOpenMode
}

// NoKeyStoreError is ErrNoKeyStore on a cluster node whose trust file names node as the
// holder of the key store ("" when it does not), saying what to do.
func NoKeyStoreError(node string) error {
	if node == "" {
		return fmt.Errorf("%w: run the command on the node that holds it (the one that wrote the cluster trust file), with --dir its data directory", ErrNoKeyStore)
	}
	return fmt.Errorf("%w: node %s holds it; run the command on that node's machine, with --dir its data directory", ErrNoKeyStore, node)
}
