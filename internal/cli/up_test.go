package cli

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cotal-go/cotal/broker"
	"github.com/cotal-go/cotal/space"
)

// TestUpRunsUntilInterruptedOrTheMeshDies drives the loop `cotal up` runs after its banner;
// its error is what makes up exit 1.
func TestUpRunsUntilInterruptedOrTheMeshDies(t *testing.T) {
	tests := []struct {
		name string
		stop func(context.CancelFunc, *space.Mesh)
		want error // nil: a clean stop
	}{
		{"an interrupt is a clean stop", func(cancel context.CancelFunc, _ *space.Mesh) { cancel() }, nil},
		{"a broker that dies underneath is an error naming it",
			func(_ context.CancelFunc, m *space.Mesh) { m.Broker().Server().Shutdown() }, broker.ErrStopped},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			m, err := space.Start(ctx, space.Options{Memory: true})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close(context.Background())
			runCtx, interrupt := context.WithCancel(ctx)
			defer interrupt()
			done := make(chan error, 1)
			go func() { done <- runMesh(runCtx, m) }()
			tc.stop(interrupt, m)
			select {
			case err = <-done:
			case <-ctx.Done():
				t.Fatal("up kept running after the mesh stopped")
			}
			if tc.want == nil && err != nil {
				t.Fatalf("runMesh = %v, want nil", err)
			}
			if tc.want != nil && (!errors.Is(err, tc.want) || !strings.Contains(err.Error(), "the mesh stopped")) {
				t.Fatalf("runMesh = %v, want an error naming %v", err, tc.want)
			}
		})
	}
}

func TestSyncLine(t *testing.T) {
	tests := []struct {
		name  string
		mode  broker.SyncMode
		every time.Duration
		want  string
	}{
		{"always promises no acknowledged loss", broker.SyncAlways, 0, "sync: always (fsync on every write"},
		{"the default is always", "", 0, "sync: always"},
		{"interval names the window of loss", broker.SyncInterval, 30 * time.Second, "sync: every 30s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := syncLine(tc.mode, tc.every); !strings.HasPrefix(got, tc.want) {
				t.Errorf("syncLine = %q, want prefix %q", got, tc.want)
			}
		})
	}
}
