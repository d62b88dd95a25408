package space

import (
	"context"
	"testing"
	"time"

	"github.com/cotal-go/cotal/internal/jsfault"
)

// TestAStreamRequestWhoseAnswerIsLostIsAskedAgain: provisioning under a start deadline asks
// again once one request has waited its own bound, instead of spending the whole deadline
// on an answer that will not come.
func TestAStreamRequestWhoseAnswerIsLostIsAskedAgain(t *testing.T) {
	t.Parallel()
	m := startTestMesh(t, Options{Memory: true})
	rt, err := m.space("main")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	chat, err := rt.js.Stream(ctx, rt.names.ChatStream())
	if err != nil {
		t.Fatal(err)
	}
	lossy := &jsfault.LoseFirst{JetStream: rt.js}
	st, err := ensureStream(ctx, lossy, chat.CachedInfo().Config, false, 300*time.Millisecond)
	if err != nil {
		t.Fatalf("provisioning with its first answer lost: %v", err)
	}
	if got := lossy.Asked(); got != 2 {
		t.Errorf("asked %d times, want 2", got)
	}
	if st.CachedInfo().Config.Name != rt.names.ChatStream() {
		t.Errorf("got stream %s", st.CachedInfo().Config.Name)
	}
}
