package space_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cotal-go/cotal/space"
)

// TestAListenerPortInUseIsNamed: nats-server opens its route listener from a goroutine after
// it has started, so a port another process holds surfaced as "accepts no connections" after
// the whole ready timeout. The start fails with the listener's own error, for the route and
// the leaf listener alike.
func TestAListenerPortInUseIsNamed(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	at := taken.Addr().String()
	for _, tc := range []struct {
		name string
		opts space.Options
	}{
		{"route", space.Options{Listen: "127.0.0.1:0", Cluster: space.ClusterOptions{Name: "c", Listen: at, Peers: []string{at}, ServerName: "n0"}}},
		{"leaf", space.Options{Leaf: space.LeafOptions{Listen: at}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			tc.opts.Dir, tc.opts.Memory = t.TempDir(), true
			m, err := space.Start(ctx, tc.opts)
			if err == nil {
				_ = m.Close(context.Background())
				t.Fatalf("a mesh started with its %s listener on a port in use", tc.name)
			}
			if !strings.Contains(err.Error(), "address already in use") {
				t.Fatalf("start with the %s port in use: %v; want the listener's error", tc.name, err)
			}
		})
	}
}
