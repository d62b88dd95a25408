package config

import (
	"strings"
	"testing"
)

func TestLeafKeysAreCheckedTogether(t *testing.T) {
	hub := "nats-leaf://hub.example:7422"
	tests := []struct {
		name string
		edit func(*Config)
		want []string // keys named in the errors; none means valid
	}{
		{"off", func(*Config) {}, nil},
		{"a hub", func(c *Config) { c.Leaf.Listen = "0.0.0.0:7422" }, nil},
		{"a leaf", func(c *Config) { c.Leaf = Leaf{Hub: hub, Creds: []string{"main=/k/leaf.creds"}} }, nil},
		{"a leaf over TLS", func(c *Config) { c.Leaf = Leaf{Hub: "tls://hub.example:7422", Creds: []string{"main=/k/leaf.creds"}} }, nil},
		{"a hub listener that is no address", func(c *Config) { c.Leaf.Listen = "7422" }, []string{"leaf.listen"}},
		{"a hub URL of another scheme", func(c *Config) { c.Leaf = Leaf{Hub: "http://hub:7422", Creds: []string{"main=/k"}} }, []string{"leaf.hub"}},
		{"a hub URL without a port", func(c *Config) { c.Leaf = Leaf{Hub: "nats-leaf://hub", Creds: []string{"main=/k"}} }, []string{"leaf.hub"}},
		{"hub and leaf at once", func(c *Config) { c.Leaf = Leaf{Listen: "0.0.0.0:7422", Hub: hub, Creds: []string{"main=/k"}} }, []string{"leaf.hub"}},
		{"a hub URL without credentials", func(c *Config) { c.Leaf.Hub = hub }, []string{"leaf.creds"}},
		{"credentials without a hub URL", func(c *Config) { c.Leaf.Creds = []string{"main=/k"} }, []string{"leaf.creds"}},
		{"an entry without a space", func(c *Config) { c.Leaf = Leaf{Hub: hub, Creds: []string{"/k/leaf.creds"}} }, []string{"leaf.creds"}},
		{"a space the mesh does not run", func(c *Config) { c.Leaf = Leaf{Hub: hub, Creds: []string{"ops=/k"}} }, []string{"leaf.creds"}},
		{"a space twice", func(c *Config) { c.Leaf = Leaf{Hub: hub, Creds: []string{"main=/k", "main=/j"}} }, []string{"leaf.creds"}},
		{"with open", func(c *Config) { c.Open, c.Leaf.Listen = true, "127.0.0.1:7422" }, []string{"leaf"}},
		{"on a cluster node", func(c *Config) { c.Cluster.Name, c.Leaf.Listen = "east", "127.0.0.1:7422" }, []string{"leaf"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := defaults(t.TempDir())
			tt.edit(&c)
			errs := c.checkLeaf()
			if len(errs) != len(tt.want) {
				t.Fatalf("checkLeaf() = %v, want errors for %v", errs, tt.want)
			}
			for i, err := range errs {
				if !strings.HasPrefix(err.Error(), tt.want[i]+":") {
					t.Errorf("error %q does not name %s", err, tt.want[i])
				}
			}
		})
	}
}

func TestLeafCredsBySpace(t *testing.T) {
	got := Leaf{Creds: []string{"main=/k/a.creds", "ops=/k/b=c.creds"}}.CredsBySpace()
	if len(got) != 2 || got["main"] != "/k/a.creds" || got["ops"] != "/k/b=c.creds" {
		t.Fatalf("CredsBySpace() = %v", got)
	}
}
