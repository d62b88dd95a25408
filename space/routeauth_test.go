package space_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/cotal-go/cotal/broker"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/testcert"
	"github.com/cotal-go/cotal/internal/testlog"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
)

// clusterTrust reads the trust file node holds.
func clusterTrust(t *testing.T, node *space.Mesh) provisioner.ClusterTrust {
	t.Helper()
	trust, err := provisioner.ReadClusterTrust(filepath.Join(node.Dir(), space.TrustFile))
	if err != nil {
		t.Fatal(err)
	}
	return trust
}

// passwords records the route passwords presented to a rogue server, and refuses them all.
type passwords struct {
	mu   sync.Mutex
	seen []string
}

func (p *passwords) Check(c server.ClientAuthentication) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, c.GetOpts().Password)
	return false
}

func (p *passwords) got() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

// TestARouteWithoutTheClusterSecretIsRefused: a process on the machine that dials a node's
// route listener joins the cluster only with the trust file's secret and route certificate;
// with anything less the node closes the route before it carries a message.
func TestARouteWithoutTheClusterSecretIsRefused(t *testing.T) {
	nodes := startCluster(t)
	node := nodes[0]
	trust := clusterTrust(t, node)
	routes := node.Broker().Server().NumRoutes()
	routeAddr := node.Broker().Server().ClusterAddr().String()
	shared, err := broker.RouteTLS([]byte(trust.RouteCert), []byte(trust.RouteKey), []byte(trust.RouteCert))
	if err != nil {
		t.Fatal(err)
	}
	cert, key := testcert.New(t, "rogue")
	own, err := broker.RouteTLS(cert, key, cert)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		secret string
		tls    *tls.Config
		joins  bool
	}{
		{"no secret, no TLS", "", nil, false},
		{"the secret without TLS", trust.RouteSecret, nil, false},
		{"a certificate of its own", "", own, false},
		{"the secret with a certificate of its own", trust.RouteSecret, own, false},
		{"a wrong secret with the route certificate", "guess", shared, false},
		{"the secret with the route certificate", trust.RouteSecret, shared, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := &url.URL{Scheme: "nats", Host: routeAddr}
			if c.secret != "" {
				u.User = url.UserPassword("cotal-route", c.secret)
			}
			var tc *tls.Config
			if c.tls != nil {
				tc = c.tls.Clone()
				tc.ClientAuth = tls.RequireAndVerifyClientCert
			}
			rogue, log := spacetest.Rogue(t, server.Options{Routes: []*url.URL{u},
				Cluster: server.ClusterOpts{Host: "127.0.0.1", Port: server.RANDOM_PORT, TLSConfig: tc, ConnectRetries: -1}})
			if c.joins {
				await.True(t, 30*time.Second, "the route with the secret and certificate", func() bool { return rogue.NumRoutes() > 0 })
				return
			}
			await.True(t, 30*time.Second, "the rogue route's attempt to be closed", func() bool {
				return log.Has("route", "closed") || log.Has("route", "error")
			})
			if n, r := node.Broker().Server().NumRoutes(), rogue.NumRoutes(); n != routes || r != 0 {
				t.Errorf("after the refusal the node has %d routes (%d before) and the rogue %d, want none:\n%s", n, routes, r, log)
			}
		})
	}
	t.Run("a process on a stopped node's route port learns no secret", func(t *testing.T) {
		squatRoutePort(t, nodes[0], nodes[2])
	})
}

// squatRoutePort stops node lost and listens on its route port as a route, without TLS and
// then with a certificate of its own, until node dialler has tried it; it must have been
// refused before it sent a CONNECT, so no password reached the process.
func squatRoutePort(t *testing.T, dialler, lost *space.Mesh) {
	addr := lost.Broker().Server().ClusterAddr()
	if err := lost.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	cert, key := testcert.New(t, "squatter")
	own, err := broker.RouteTLS(cert, key, cert)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []*tls.Config{nil, own} {
		seen := &passwords{}
		squatter, log := spacetest.Rogue(t, server.Options{CustomRouterAuthentication: seen,
			Cluster: server.ClusterOpts{Host: addr.IP.String(), Port: addr.Port, TLSConfig: tc}})
		await.True(t, 30*time.Second, "the node's route to the squatter to be closed", func() bool {
			return log.Has("route", "closed") || log.Has("handshake error")
		})
		if got := seen.got(); len(got) > 0 {
			t.Errorf("the squatter (TLS %v) was given route passwords %q, want none", tc != nil, got)
		}
		if dialler.Broker().Server().NumRoutes() > 0 && squatter.NumRoutes() > 0 {
			t.Errorf("the node routes to the squatter (TLS %v):\n%s", tc != nil, log)
		}
		squatter.Shutdown()
		squatter.WaitForShutdown()
	}
}

// TestRoutesTakeTheOperatorsCertificates: with route TLS files every node presents the
// operator's certificate, and a route holding the secret and the trust file's own
// certificate is refused, since that certificate is no longer the cluster's CA.
func TestRoutesTakeTheOperatorsCertificates(t *testing.T) {
	cert, key := testcert.Write(t, "cotal test route")
	nodes := startClusterWith(t, func(_ int, o *space.Options) {
		o.Cluster.TLSCert, o.Cluster.TLSKey, o.Cluster.TLSCA = cert, key, cert
	})
	trust := clusterTrust(t, nodes[0])
	shared, err := broker.RouteTLS([]byte(trust.RouteCert), []byte(trust.RouteKey), []byte(trust.RouteCert))
	if err != nil {
		t.Fatal(err)
	}
	u := &url.URL{Scheme: "nats", Host: nodes[0].Broker().Server().ClusterAddr().String(), User: url.UserPassword("cotal-route", trust.RouteSecret)}
	rogue, log := spacetest.Rogue(t, server.Options{Routes: []*url.URL{u},
		Cluster: server.ClusterOpts{Host: "127.0.0.1", Port: server.RANDOM_PORT, TLSConfig: shared, ConnectRetries: -1}})
	await.True(t, 30*time.Second, "the route with the trust file's certificate to be closed", func() bool {
		return log.Has("handshake error")
	})
	if rogue.NumRoutes() != 0 {
		t.Errorf("the route with the trust file's certificate joined:\n%s", log)
	}
}

// TestRoutesBeyondLoopbackNeedTLS: a node whose route listener or peers leave the machine
// does not start without route TLS files, and says which to give.
func TestRoutesBeyondLoopbackNeedTLS(t *testing.T) {
	cert, key := testcert.Write(t, "cotal test route")
	cases := []struct {
		name    string
		cluster space.ClusterOptions
		want    error
		says    string
	}{
		{"every interface", space.ClusterOptions{Listen: "0.0.0.0:6222", Peers: []string{"0.0.0.0:6222"}}, space.ErrRouteTLS, "cluster.tls_cert"},
		{"a peer on another machine", space.ClusterOptions{Listen: "127.0.0.1:6222", Peers: []string{"127.0.0.1:6222", "10.1.2.3:6222"}}, space.ErrRouteTLS, "10.1.2.3:6222"},
		{"TLS files in part", space.ClusterOptions{Listen: "0.0.0.0:6222", Peers: []string{"0.0.0.0:6222"}, TLSCert: cert, TLSKey: key}, nil, "together"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.cluster.Name = "test"
			_, err := space.Start(context.Background(), space.Options{Dir: t.TempDir(), Memory: true, Listen: "127.0.0.1:0", Cluster: c.cluster})
			if err == nil || (c.want != nil && !errors.Is(err, c.want)) || !strings.Contains(err.Error(), c.says) {
				t.Errorf("start: %v, want %v saying %q", err, c.want, c.says)
			}
		})
	}
}

// TestANodeStartedBeforeTheTrustFileWaitsForIt: three nodes started at once, as the recipe of
// docs/cluster.md starts them: the two without the key store wait for the trust and backstop
// files, saying so, and join once the key-store node has written them.
func TestANodeStartedBeforeTheTrustFileWaitsForIt(t *testing.T) {
	clusterSlot <- struct{}{}
	t.Cleanup(func() { <-clusterSlot })
	ctx, cancel := context.WithTimeout(context.Background(), clusterStartBudget)
	defer cancel()
	peers := []string{spacetest.FreeAddr(t), spacetest.FreeAddr(t), spacetest.FreeAddr(t)}
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	logs := &testlog.Buffer{}
	meshes := make([]*space.Mesh, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		o := space.Options{Dir: dirs[i], Memory: true, Listen: "127.0.0.1:0",
			Cluster: space.ClusterOptions{Name: "test", Listen: peers[i], Peers: peers, ServerName: fmt.Sprintf("node%d", i)}}
		if i > 0 {
			o.Cluster.Trust = filepath.Join(dirs[0], space.TrustFile)
			o.Cluster.Backstop = filepath.Join(dirs[0], space.BackstopFile)
			o.Logger = slog.New(slog.NewTextHandler(logs, nil))
		}
		wg.Go(func() { meshes[i], errs[i] = space.Start(ctx, o) })
	}
	wg.Wait()
	closeTogether(t, meshes)
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("start the nodes together: %v", err)
	}
	if !strings.Contains(logs.String(), "waiting for a cluster file") {
		t.Logf("the key-store node wrote its files before the others looked; nothing to wait for:\n%.1000s", logs)
	}
}
