package config

import (
	"fmt"
	"maps"
	"net/url"
	"slices"

	"github.com/cotal-go/cotal/space"
)

// checkLeaf reports the leaf keys that cannot work together, or with spaces, open and cluster.
func checkLeaf(c space.Options) []error {
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
	for _, s := range slices.Sorted(maps.Keys(l.Creds)) {
		switch {
		case s == "" || l.Creds[s] == "":
			add("leaf.creds", "%q is not SPACE=FILE; use e.g. main=/path/to/leaf.creds", s+"="+l.Creds[s])
		case !slices.Contains(c.Spaces, s):
			add("leaf.creds", "%s=%s names space %s, which is not in spaces; add the space or drop the entry", s, l.Creds[s], s)
		}
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
