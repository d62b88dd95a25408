package config

import "github.com/cotal-go/cotal/space"

// checkCluster reports the cluster keys that cannot work.
func checkCluster(c space.ClusterOptions) []error {
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
