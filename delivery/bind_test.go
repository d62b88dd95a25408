package delivery

import (
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/internal/jsfault"
)

// TestABucketLookupWhoseAnswerIsLostIsAskedAgain: Start's bucket lookups ask again after
// bindTimeout instead of spending Start's whole bound on an answer that will not come (a
// backstop taking over from a dead node failed its first start that way, and failover took
// 11 s); a refusal is not asked again.
func TestABucketLookupWhoseAnswerIsLostIsAskedAgain(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tests := []struct {
		name   string
		bucket string
		asked  int64
		err    error
	}{
		{"the lost answer is asked again", testNames.DurableMembersBucket(), 2, nil},
		{"a refusal after a lost answer is not", "no_such_bucket", 2, jetstream.ErrBucketNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lossy := &jsfault.LoseFirst{JetStream: h.js}
			s := &Service{js: lossy}
			ctx, cancel := context.WithTimeout(context.Background(), bindTimeout*bindTries)
			defer cancel()
			_, err := s.bind(ctx, tt.bucket)
			if !errors.Is(err, tt.err) {
				t.Fatalf("bind(%s) = %v, want %v", tt.bucket, err, tt.err)
			}
			if got := lossy.Asked(); got != tt.asked {
				t.Errorf("asked %d times, want %d", got, tt.asked)
			}
		})
	}
}
