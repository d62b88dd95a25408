package space

import (
	"context"
	"testing"
	"time"
)

// NewTest starts a mesh for one test and closes it with t.Cleanup: a temporary directory,
// memory streams, no TCP listener, authentication on, one space "main" unless configure
// changes it. It fails the test at once if the mesh does not start.
func NewTest(t testing.TB, configure ...func(*Options)) *Mesh {
	t.Helper()
	opts := Options{Memory: true}
	for _, c := range configure {
		c(&opts)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("start test mesh: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Errorf("close test mesh: %v", err)
		}
	})
	return m
}
