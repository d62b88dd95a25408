package config

// Cluster makes `cotal up` one node of a NATS cluster of cotal nodes. Every key is
// empty by default: the mesh runs alone.
type Cluster struct {
	// Name is the cluster name every node shares; setting it turns cluster mode on.
	Name string `koanf:"name"`
	// Listen is this node's route listener host:port (e.g. 127.0.0.1:6222).
	Listen string `koanf:"listen"`
	// Peers are the route listeners of every node of the cluster, this one included, the
	// same list on each node. Three or more make every stream and bucket R3.
	Peers []string `koanf:"peers"`
	// ServerName names this node, unique in the cluster; default "cotal-" + the route port.
	ServerName string `koanf:"server_name"`
	// Trust is the cluster trust file (cluster-trust.json) copied from the node that holds the
	// key store; set on every other node, which then holds no keys.
	Trust string `koanf:"trust"`
	// Backstop is the cluster backstop file (cluster-backstop.json) copied from the node that
	// holds the key store, beside Trust: it lets this node take over each space's durable
	// backstop when the node running it dies. It holds secrets, like a .creds file.
	Backstop string `koanf:"backstop"`
	// TLSCert and TLSKey are this node's route certificate and key, TLSCA the CA that signed
	// every node's; required once a route leaves loopback.
	TLSCert string `koanf:"tls_cert"`
	TLSKey  string `koanf:"tls_key"`
	TLSCA   string `koanf:"tls_ca"`
}

// check reports the cluster keys that cannot work.
func (c Cluster) check() []error {
	var errs []error
	add := func(key, problem string) { errs = append(errs, fieldError{key: key, problem: problem}) }
	if c.Name == "" {
		if c.Listen != "" || len(c.Peers) > 0 || c.Trust != "" || c.ServerName != "" || c.Backstop != "" || c.TLSCert != "" || c.TLSKey != "" || c.TLSCA != "" {
			add("cluster.name", "empty while other cluster keys are set; set the name every node shares, or drop the cluster keys")
		}
		return errs
	}
	if c.Listen == "" {
		add("cluster.listen", "empty; set this node's route listener, e.g. 127.0.0.1:6222")
	} else if err := checkAddr(c.Listen); err != nil {
		add("cluster.listen", c.Listen+" is not host:port; use e.g. 127.0.0.1:6222")
	}
	if c.Backstop != "" && c.Trust == "" {
		add("cluster.backstop", "set without cluster.trust; the node with the key store writes the file, set it only on the other nodes")
	}
	if len(c.Peers) == 0 {
		add("cluster.peers", "empty; list every node's route listener, this one's included")
	}
	for _, p := range c.Peers {
		if err := checkAddr(p); err != nil || p == "" {
			add("cluster.peers", p+" is not host:port; list each node's route listener, e.g. 127.0.0.1:6222")
		}
	}
	return errs
}
