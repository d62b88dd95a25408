package endpoint

import (
	"context"
	"log/slog"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/internal/jsfault"
	"github.com/cotal-go/cotal/wire"
)

// TestAJoinsLostFrontierReadIsAskedAgain: the watermark read of a join (SPEC §7 step 1) asks
// again once an attempt has waited readAttempt, rather than spend the caller's whole deadline
// on an answer that will not come (a cluster test's joins failed that way).
func TestAJoinsLostFrontierReadIsAskedAgain(t *testing.T) {
	t.Parallel()
	js := jsfault.JetStream(t)
	names := wire.NewNames("main")
	ctx, cancel := context.WithTimeout(context.Background(), 4*readAttempt)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: names.ChatStream(),
		Subjects: []string{names.ChatFilter(">")}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := js.Publish(ctx, names.ChatSubject("UA", "general"), []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	lossy := &jsfault.LoseFirst{JetStream: js}
	e := &Endpoint{js: lossy, names: names}
	seq, err := e.chatFrontier(ctx)
	if err != nil || seq != 3 {
		t.Fatalf("chatFrontier = %d, %v; want 3", seq, err)
	}
	if got := lossy.Asked(); got != 2 {
		t.Errorf("asked %d times, want 2", got)
	}
}

// TestAHistoryReadsLostConsumerCreateIsAskedAgain: the create of the pinned history consumer
// (SPEC §7 step 3) asks again once an attempt has waited readAttempt, so a rejoin whose first
// create was dropped by a clustered metadata leader still backfills within its deadline.
func TestAHistoryReadsLostConsumerCreateIsAskedAgain(t *testing.T) {
	t.Parallel()
	js := jsfault.JetStream(t)
	names := wire.NewNames("main")
	ctx, cancel := context.WithTimeout(context.Background(), 4*readAttempt)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: names.ChatStream(),
		Subjects: []string{names.ChatFilter(">")}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := js.Publish(ctx, names.ChatSubject("UA", "general"), []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	lossy := &jsfault.LoseFirst{JetStream: js}
	e := &Endpoint{js: lossy, names: names, id: "UB", log: slog.New(slog.DiscardHandler)}
	copies, err := e.readHistory(ctx, "general", 3, 0, 0)
	if err != nil || len(copies) != 3 {
		t.Fatalf("readHistory = %d copies, %v; want 3", len(copies), err)
	}
	if got := lossy.Asked(); got != 2 {
		t.Errorf("asked %d times, want 2", got)
	}
}
