package endpoint

import (
	"context"
	"log/slog"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/internal/jsfault"
	"github.com/cotal-go/cotal/wire"
)

// TestAJoinsLostReadsAreAskedAgain: the watermark read of a join (SPEC §7 step 1) and the
// create of the pinned history consumer (step 3) ask again once an attempt has waited
// readAttempt, rather than spend the caller's whole deadline on an answer that will not come
// (a cluster test's joins, and a rejoin's backfill, failed that way).
func TestAJoinsLostReadsAreAskedAgain(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		read func(ctx context.Context, e *Endpoint) (int, error) // how many of the 3 messages it saw
	}{
		{"the watermark", func(ctx context.Context, e *Endpoint) (int, error) {
			seq, err := e.chatFrontier(ctx)
			return int(seq), err
		}},
		{"the history consumer", func(ctx context.Context, e *Endpoint) (int, error) {
			n := 0
			err := e.readHistory(ctx, "general", 3, 0, func(inbound) { n++ })
			return n, err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
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
			if n, err := tt.read(ctx, e); err != nil || n != 3 {
				t.Fatalf("read %d of 3, %v", n, err)
			}
			if got := lossy.Asked(); got != 2 {
				t.Errorf("asked %d times, want 2", got)
			}
		})
	}
}
