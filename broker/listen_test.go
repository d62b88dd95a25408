package broker

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

func TestDeferListenKeepsThePortClosedUntilListen(t *testing.T) {
	tt := newTestTrust(t)
	cfg := operatorConfig(tt)
	cfg.Listen, cfg.DeferListen = "127.0.0.1:0", true
	b := startBroker(t, cfg)

	if got := b.ClientURL(); got != "" {
		t.Fatalf("ClientURL before Listen = %q, want \"\": the port must stay closed", got)
	}
	roundTrip(t, connect(t, b, tt.user(t, "alice").option()))
	if err := b.Listen(); err != nil {
		t.Fatalf("Listen: %v", err)
	}
	u := b.ClientURL()
	if !strings.HasPrefix(u, "nats://127.0.0.1:") || strings.HasSuffix(u, ":0") {
		t.Fatalf("ClientURL after Listen = %q, want nats://127.0.0.1:<bound port>", u)
	}
	nc, err := nats.Connect(u, tt.user(t, "alice").option())
	if err != nil {
		t.Fatalf("TCP connect to %s: %v", u, err)
	}
	defer nc.Close()
	roundTrip(t, nc)
	if err := b.Listen(); err != nil || b.ClientURL() != u {
		t.Fatalf("second Listen = %v with ClientURL %q, want nil and %q unchanged", err, b.ClientURL(), u)
	}
}

func TestListenOnATakenPortFailsAndStopsTheBroker(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	tt := newTestTrust(t)
	cfg := operatorConfig(tt)
	cfg.Listen, cfg.DeferListen = taken.Addr().String(), true
	b := startBroker(t, cfg)

	if err := b.Listen(); !errors.Is(err, ErrFatal) {
		t.Fatalf("Listen on a taken port = %v, want ErrFatal", err)
	}
	select {
	case <-b.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed after the listener failed")
	}
	if !errors.Is(b.Err(), ErrFatal) {
		t.Fatalf("Err = %v, want ErrFatal", b.Err())
	}
}

func TestDoneSaysWhyTheServerStopped(t *testing.T) {
	tests := []struct {
		name string
		stop func(*Broker)
		want error
	}{
		{"after Shutdown Err is nil", func(b *Broker) { _ = b.Shutdown(context.Background()) }, nil},
		{"a server shut down underneath the broker is ErrStopped", func(b *Broker) { b.Server().Shutdown() }, ErrStopped},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := startBroker(t, operatorConfig(newTestTrust(t)))
			if err := b.Err(); err != nil {
				t.Fatalf("Err of a running broker = %v, want nil", err)
			}
			tc.stop(b)
			select {
			case <-b.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("Done not closed after the server stopped")
			}
			if err := b.Err(); !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Fatalf("Err = %v, want %v", err, tc.want)
			}
		})
	}
}
