package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/cotal-go/cotal/space"
)

func TestLeafKeysAreCheckedTogether(t *testing.T) {
	hub := "nats-leaf://hub.example:7422"
	creds := func(entries ...string) map[string]string {
		m := map[string]string{}
		for _, e := range entries {
			s, file, _ := strings.Cut(e, "=")
			m[s] = file
		}
		return m
	}
	tests := []struct {
		name string
		edit func(*space.Options)
		want []string // keys named in the errors; none means valid
	}{
		{"off", func(*space.Options) {}, nil},
		{"a hub", func(c *space.Options) { c.Leaf.Listen = "0.0.0.0:7422" }, nil},
		{"a leaf", func(c *space.Options) { c.Leaf = space.LeafOptions{Hub: hub, Creds: creds("main=/k/leaf.creds")} }, nil},
		{"a leaf over TLS", func(c *space.Options) {
			c.Leaf = space.LeafOptions{Hub: "tls://hub.example:7422", Creds: creds("main=/k/leaf.creds")}
		}, nil},
		{"a hub listener that is no address", func(c *space.Options) { c.Leaf.Listen = "7422" }, []string{"leaf.listen"}},
		{"a hub URL of another scheme", func(c *space.Options) { c.Leaf = space.LeafOptions{Hub: "http://hub:7422", Creds: creds("main=/k")} }, []string{"leaf.hub"}},
		{"a hub URL without a port", func(c *space.Options) { c.Leaf = space.LeafOptions{Hub: "nats-leaf://hub", Creds: creds("main=/k")} }, []string{"leaf.hub"}},
		{"hub and leaf at once", func(c *space.Options) {
			c.Leaf = space.LeafOptions{Listen: "0.0.0.0:7422", Hub: hub, Creds: creds("main=/k")}
		}, []string{"leaf.hub"}},
		{"a hub URL without credentials", func(c *space.Options) { c.Leaf.Hub = hub }, []string{"leaf.creds"}},
		{"credentials without a hub URL", func(c *space.Options) { c.Leaf.Creds = creds("main=/k") }, []string{"leaf.creds"}},
		{"an entry without a file", func(c *space.Options) { c.Leaf = space.LeafOptions{Hub: hub, Creds: creds("main=")} }, []string{"leaf.creds"}},
		{"a space the mesh does not run", func(c *space.Options) { c.Leaf = space.LeafOptions{Hub: hub, Creds: creds("ops=/k")} }, []string{"leaf.creds"}},
		{"with open", func(c *space.Options) { c.Open, c.Leaf.Listen = true, "127.0.0.1:7422" }, []string{"leaf"}},
		{"on a cluster node", func(c *space.Options) { c.Cluster.Name, c.Leaf.Listen = "east", "127.0.0.1:7422" }, []string{"leaf"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := defaults(t.TempDir())
			tt.edit(&c)
			errs := checkLeaf(c)
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

// TestLeafCredsEntries checks the SPACE=FILE entries leaf.creds is written in, in every layer.
func TestLeafCredsEntries(t *testing.T) {
	tests := []struct {
		name  string
		flags any
		env   string
		want  map[string]string
		err   string // "" means loaded
	}{
		{"a list of entries, a file name holding =", []string{"main=/k/a.creds", "ops=/k/b=c.creds"}, "",
			map[string]string{"main": "/k/a.creds", "ops": "/k/b=c.creds"}, ""},
		{"one entry from the environment", nil, "main=/k/a.creds", map[string]string{"main": "/k/a.creds"}, ""},
		{"an entry without a space", []string{"/k/leaf.creds"}, "", nil, `leaf.creds: "/k/leaf.creds" is not SPACE=FILE`},
		{"a space twice", []string{"main=/k", "main=/j"}, "", nil, "leaf.creds: space main is listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			flags := map[string]any{"dir": dir, "spaces": []string{"main", "ops"}, "leaf.hub": "nats-leaf://hub:7422"}
			if tt.flags != nil {
				flags["leaf.creds"] = tt.flags
			}
			env := []string{"HOME=" + dir}
			if tt.env != "" {
				env = append(env, "COTAL_LEAF_CREDS="+tt.env)
			}
			o, err := Load(LoadOptions{Env: env, Flags: flags})
			if tt.err != "" {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Load = %v; want ErrInvalid mentioning %q", err, tt.err)
				}
				return
			}
			if err != nil || len(o.Leaf.Creds) != len(tt.want) {
				t.Fatalf("Load = %v, %v; want creds %v", o.Leaf.Creds, err, tt.want)
			}
			for s, file := range tt.want {
				if o.Leaf.Creds[s] != file {
					t.Errorf("creds[%s] = %q, want %q", s, o.Leaf.Creds[s], file)
				}
			}
		})
	}
}
