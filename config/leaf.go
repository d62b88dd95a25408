package config

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Leaf links meshes as hub and leaf (docs/accounts.md "Leaf links"): a laptop's mesh joins a
// hub's space by space, so its agents reach the hub's while the link is up and keep working
// among themselves while it is down. Every key is empty by default: no link.
type Leaf struct {
	// Listen is a hub's leaf node listener host:port (e.g. 0.0.0.0:7422), which leaf meshes
	// connect to. It takes TLS when the client listener does (tls.cert, tls.key).
	Listen string `koanf:"listen"`
	// Hub is the hub's leaf node URL this mesh connects to as a leaf: nats-leaf://host:port,
	// or tls://host:port for a hub whose listener takes TLS.
	Hub string `koanf:"hub"`
	// Creds are SPACE=FILE entries, one per space linked to the hub: FILE is the .creds file
	// the hub minted for that space with `cotal auth mint --profile leaf`, mode 0600. A space
	// not listed stays local.
	Creds []string `koanf:"creds"`
}

// CredsBySpace is Creds as a map from space to file; entries that are not SPACE=FILE are
// left out (Validate reports them).
func (l Leaf) CredsBySpace() map[string]string {
	if len(l.Creds) == 0 {
		return nil
	}
	m := map[string]string{}
	for _, e := range l.Creds {
		if s, file, ok := strings.Cut(e, "="); ok && s != "" && file != "" {
			m[s] = file
		}
	}
	return m
}

// checkLeaf reports the leaf keys that cannot work together, or with spaces, open and cluster.
func (c Config) checkLeaf() []error {
	l := c.Leaf
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fieldError{key: key, problem: fmt.Sprintf(format, args...)})
	}
	if err := checkAddr(l.Listen); err != nil {
		add("leaf.listen", "%q is not host:port; use e.g. 0.0.0.0:7422", l.Listen)
	}
	if l.Hub != "" {
		if err := checkHubURL(l.Hub); err != nil {
			add("leaf.hub", "%v", err)
		}
	}
	switch {
	case l.Hub == "" && l.Listen == "" && len(l.Creds) == 0:
		return errs
	case l.Hub != "" && l.Listen != "":
		add("leaf.hub", "set together with leaf.listen; a mesh is either a hub (leaf.listen) or a leaf of one (leaf.hub), not both")
	case l.Hub == "" && len(l.Creds) > 0:
		add("leaf.creds", "set without leaf.hub; set the hub's leaf URL, or drop leaf.creds")
	case l.Hub != "" && len(l.Creds) == 0:
		add("leaf.creds", "empty while leaf.hub is set; give SPACE=FILE for each space to link, FILE minted on the hub with cotal auth mint --profile leaf")
	}
	if c.Open {
		add("leaf", "set together with open; a leaf link binds authenticated accounts, so drop open or the leaf keys")
	}
	if c.Cluster.Name != "" {
		add("leaf", "set on a cluster node; leaf links are not supported on a cluster node, run the hub or the leaf as a single mesh")
	}
	seen := map[string]bool{}
	for _, e := range l.Creds {
		s, file, ok := strings.Cut(e, "=")
		switch {
		case !ok || s == "" || file == "":
			add("leaf.creds", "%q is not SPACE=FILE; use e.g. main=/path/to/leaf.creds", e)
		case !slices.Contains(c.Spaces, s):
			add("leaf.creds", "%q names space %s, which is not in spaces; add the space or drop the entry", e, s)
		case seen[s]:
			add("leaf.creds", "space %s is listed twice; keep one file per space", s)
		}
		seen[s] = true
	}
	return errs
}

// checkHubURL accepts the URLs a leaf can dial: nats-leaf, nats or tls, with host:port.
func checkHubURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "nats-leaf" && u.Scheme != "nats" && u.Scheme != "tls") || u.Port() == "" || u.Hostname() == "" {
		return fmt.Errorf("%q is not a leaf URL; use nats-leaf://host:port, or tls://host:port for a hub with TLS", raw)
	}
	return nil
}
