package config

import (
	"strings"
	"testing"

	"github.com/cotal-go/cotal/space"
)

func TestClusterKeysAreCheckedTogether(t *testing.T) {
	tests := []struct {
		name string
		c    space.ClusterOptions
		want []string // keys named in the errors; none means valid
	}{
		{"off", space.ClusterOptions{}, nil},
		{"a node", space.ClusterOptions{Name: "east", Listen: "127.0.0.1:6222", Peers: []string{"127.0.0.1:6222", "127.0.0.1:6223"}}, nil},
		{"keys without a name", space.ClusterOptions{Listen: "127.0.0.1:6222"}, []string{"cluster.name"}},
		{"no route listener", space.ClusterOptions{Name: "east", Peers: []string{"127.0.0.1:6222"}}, []string{"cluster.listen"}},
		{"no peers", space.ClusterOptions{Name: "east", Listen: "127.0.0.1:6222"}, []string{"cluster.peers"}},
		{"a peer that is no address", space.ClusterOptions{Name: "east", Listen: "127.0.0.1:6222", Peers: []string{"node2"}}, []string{"cluster.peers"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := checkCluster(tt.c)
			if len(errs) != len(tt.want) {
				t.Fatalf("check() = %v, want errors for %v", errs, tt.want)
			}
			for i, err := range errs {
				if !strings.Contains(err.Error(), tt.want[i]) {
					t.Errorf("error %q does not name %s", err, tt.want[i])
				}
			}
		})
	}
}
