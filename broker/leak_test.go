package broker

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"
)

func TestShutdownLeavesNoGoroutines(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	tt := newTestTrust(t)
	cfg := operatorConfig(tt)
	cfg.Listen = "127.0.0.1:0"
	b, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	nc, err := nats.Connect("", nats.InProcessServer(b.InProcess()), tt.user(t, "alice").option())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	js := jetStream(t, nc)
	createStream(t, js, "LEAK", jetstream.MemoryStorage)
	publish(t, js, "leak.x", "one")
	nc.Close()
	shutdown(t, b)
}
