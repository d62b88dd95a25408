package space_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cotal-go/cotal/broker"
	"github.com/cotal-go/cotal/space"
)

func TestDoneClosesWhenTheMeshStops(t *testing.T) {
	tests := []struct {
		name string
		stop func(*space.Mesh)
		want error // nil: Err must be nil
	}{
		{"after Close Err is nil", func(m *space.Mesh) { _ = m.Close(context.Background()) }, nil},
		{"a broker shut down underneath the mesh makes Err name it",
			func(m *space.Mesh) { m.Broker().Server().Shutdown() }, broker.ErrStopped},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			m, err := space.Start(ctx, space.Options{Memory: true, Listen: "127.0.0.1:0"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = m.Close(context.Background()) })
			if m.Broker().ClientURL() == "" {
				t.Fatal("Start returned before the client listener was open")
			}
			select {
			case <-m.Done():
				t.Fatal("Done is closed on a running mesh")
			default:
			}
			tc.stop(m)
			select {
			case <-m.Done():
			case <-time.After(15 * time.Second):
				t.Fatal("Done not closed within 15s of the mesh stopping")
			}
			err = m.Err()
			if tc.want == nil && err != nil {
				t.Fatalf("Err = %v, want nil", err)
			}
			if tc.want != nil && (!errors.Is(err, space.ErrBrokerStopped) || !errors.Is(err, tc.want)) {
				t.Fatalf("Err = %v, want ErrBrokerStopped wrapping %v", err, tc.want)
			}
			if err := m.Close(ctx); err != nil && tc.want == nil {
				t.Fatalf("second Close: %v", err)
			}
		})
	}
}
