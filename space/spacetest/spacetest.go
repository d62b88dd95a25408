// Package spacetest starts a private mesh for one test, as net/http/httptest starts a server:
// the real embedded broker with JetStream and JWT auth, in memory, closed at cleanup. It lives
// apart from package space so that a binary embedding a mesh never links package testing.
package spacetest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/cotal-go/cotal/delivery"
	"github.com/cotal-go/cotal/space"
)

// startTimeout bounds starting and closing the mesh.
const startTimeout = 30 * time.Second

// New starts a mesh for one test and closes it with t.Cleanup: a temporary directory (its key
// store never fsynced), memory streams on a fresh broker, no TCP listener, authentication on,
// one space "main" unless configure changes it. The mesh is fully provisioned when New returns.
// It fails the test at once if the mesh does not start, and reports an error at cleanup if it
// does not close cleanly.
func New(t testing.TB, configure ...func(*space.Options)) *space.Mesh {
	t.Helper()
	opts := space.Options{Memory: true}
	for _, c := range configure {
		c(&opts)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	m, err := space.Start(ctx, opts)
	if err != nil {
		t.Fatalf("start test mesh: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Errorf("close test mesh: %v", err)
		}
	})
	return m
}

// FreeAddr is a loopback address whose port was free a moment ago, for a listener (a client
// port, a cluster route) that must be known before the process or mesh that binds it starts.
// Another process may take the port in between; a test that cannot bear that must retry.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// DeliveryStats returns a function reading the durable backstop's counters of space on m,
// failing t at once if m does not run that backstop.
func DeliveryStats(t testing.TB, m *space.Mesh, spaceName string) func() delivery.Stats {
	t.Helper()
	if _, err := m.DeliveryStats(spaceName); err != nil {
		t.Fatal(err)
	}
	return func() delivery.Stats {
		st, err := m.DeliveryStats(spaceName)
		if err != nil {
			t.Errorf("read the delivery stats of %s: %v", spaceName, err)
		}
		return st
	}
}
