package endpoint_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/cotal-go/cotal/endpoint"
)

// warnings is a slog.Handler that keeps the records at WARN and above.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler           { return w }
func (w *warnings) WithGroup(string) slog.Handler                { return w }

func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, r.Message)
	return nil
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

func TestACleanCloseLogsNoWarning(t *testing.T) {
	h := newHarness(t)
	logged := &warnings{}
	p := h.connect("alice", func(o *endpoint.Options) { o.Logger = slog.New(logged) })
	if _, err := p.Send(ctxT(t), "general", text("hello")); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if got := logged.all(); len(got) != 0 {
		t.Errorf("a clean Close logged at WARN or above: %q", got)
	}
}
