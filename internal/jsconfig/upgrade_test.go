package jsconfig

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/wire"
)

// unbounded is s as the layout before stream limits had it: no byte, per-subject or consumer
// bound on DM, TASK and the buckets, and TASK discarding old.
func unbounded(s wire.StreamSpec) wire.StreamSpec {
	s.MaxBytes, s.MaxConsumers, s.ConsumerInactiveLimit = wire.Unlimited, wire.Unlimited, 0
	if strings.HasPrefix(s.Name, "DM_") || strings.HasPrefix(s.Name, "TASK_") {
		s.MaxMsgsPerSubject, s.Discard, s.DiscardNewPerSubject = 0, wire.DiscardOld, false
	}
	return s
}

// A data directory made with the unbounded layout takes the bounded one as a stream update,
// even where the new byte limit is below what the stream already holds: the server accepts
// every change. DM now discards new, so the server keeps what it holds (a DM waiting for its
// recipient is never evicted) and refuses new DMs until the mesh's reclaim pass makes room
// (space/dmreclaim.go).
func TestBoundedLayoutUpdatesAnUnboundedStore(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true,
		JetStream: true, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n := wire.NewNames("main")
	for _, s := range n.Streams() {
		if _, err := js.CreateStream(ctx, Stream(unbounded(s), jetstream.FileStorage)); err != nil {
			t.Fatalf("create old-layout %s: %v", s.Name, err)
		}
	}
	body := make([]byte, 1024)
	for i := range 200 {
		if _, err := js.Publish(ctx, n.InstSubject("made-up-"+string(rune('a'+i%26)), "sender"), body); err != nil {
			t.Fatalf("fill DM: %v", err)
		}
	}
	limits := wire.DefaultStreamLimits()
	limits.DMBytes = 64 << 10
	for _, cfg := range Streams(n.StreamsWithin(limits), jetstream.FileStorage) {
		if _, err := js.UpdateStream(ctx, cfg); err != nil {
			t.Fatalf("update %s to the bounded layout: %v", cfg.Name, err)
		}
	}
	dm, err := js.Stream(ctx, n.DMStream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := dm.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 200 || info.Config.MaxBytes != limits.DMBytes || info.Config.Discard != jetstream.DiscardNew ||
		info.Config.MaxMsgsPerSubject != wire.Unlimited {
		t.Fatalf("DM after the update: %d messages (want the 200 it held), limit %d bytes (want %d), discard %v, per subject %d",
			info.State.Msgs, info.Config.MaxBytes, limits.DMBytes, info.Config.Discard, info.Config.MaxMsgsPerSubject)
	}
	if _, err := js.Publish(ctx, n.InstSubject("made-up-z", "sender"), body); err == nil {
		t.Fatal("a DM past the new bound was stored; a full DM stream must refuse it")
	}
}
