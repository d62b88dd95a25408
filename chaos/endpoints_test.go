package chaos_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/cotal-go/cotal/chaos"
	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/wire"
)

// sink collects what in-test receivers surfaced, for the checker.
type sink struct {
	mu   sync.Mutex
	surf []chaos.Surfacing
	meta map[string][]endpoint.Meta // by id
}

func newSink() *sink { return &sink{meta: map[string][]endpoint.Meta{}} }

// handler is the Handler of one receiver incarnation: it records every surfacing.
func (s *sink) handler(receiver, incarnation string) endpoint.Handler {
	return func(_ context.Context, d endpoint.Delivery) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.surf = append(s.surf, chaos.Surfacing{Receiver: receiver, Incarnation: incarnation, ID: d.Message.ID})
		s.meta[d.Message.ID] = append(s.meta[d.Message.ID], d.Meta)
		return nil
	}
}

func (s *sink) all() []chaos.Surfacing {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]chaos.Surfacing(nil), s.surf...)
}

// metas returns the Meta of every surfacing of id.
func (s *sink) metas(id string) []endpoint.Meta {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]endpoint.Meta(nil), s.meta[id]...)
}

// connectTCP connects an Endpoint over the mesh's TCP listener with a .creds file, as a remote
// agent does (SPEC §10), with reconnects generous enough to outlast every restart of a test.
func connectTCP(t *testing.T, link string, m minted, h endpoint.Handler, configure ...func(*endpoint.Options)) *endpoint.Endpoint {
	t.Helper()
	opts := endpoint.Options{Link: link, CredsFile: m.Creds, Handler: h,
		MaxReconnects: 100000, ReconnectWait: 50 * time.Millisecond}
	for _, c := range configure {
		c(&opts)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ep, err := endpoint.Connect(ctx, opts)
	if err != nil {
		t.Fatalf("connect %s: %v", m.Name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = ep.Close(ctx)
	})
	return ep
}

// joinedDurable waits until ep's channel is joined with its durable backstop established.
func joinedDurable(t *testing.T, ep *endpoint.Endpoint, channel string) {
	t.Helper()
	await.True(t, time.Minute, ep.Name()+" joined "+channel+" durable", func() bool {
		st, ok := ep.JoinStatus(channel)
		return ok && st.State == endpoint.JoinedDurable
	})
}

func text(s string) []wire.Part { return []wire.Part{wire.TextPart(s)} }
