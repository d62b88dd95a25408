package bench

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/space"
)

const titleSpace = "7. Per-test space"

var figSpaceTime = figure{key: "time", metric: "start, connect 2, close", unit: "ms",
	target: &Target{Goal: AtMost, Value: 3}}

// spaceRuns is how many runs of each side the per-test space takes per Config.Runs: a run
// is short, so more of them steady the median.
const spaceRuns = 3

func spaceCases(Config) []Case {
	return []Case{{Name: "authenticated, memory", run: func(ctx context.Context, s *suite) ([]Row, error) {
		t := *s
		t.cfg.Runs = s.cfg.Runs * spaceRuns
		return t.pair(ctx, titleSpace, "authenticated, memory", []figure{figSpaceTime}, spaceCotal, spaceRaw)
	}}}
}

// spaceCotal is what spacetest.New does for a test that uses two agents: start a whole mesh
// (key store, broker, provisioning, delivery), mint and connect two endpoints, close.
func spaceCotal(ctx context.Context, _ int) (figures, error) {
	start := time.Now()
	m, err := space.Start(ctx, space.Options{Memory: true})
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"alice", "bob"} {
		if _, err := m.Endpoint(ctx, space.AgentSpec{Name: name}); err != nil {
			_ = m.Close(ctx)
			return nil, err
		}
	}
	if err := m.Close(ctx); err != nil {
		return nil, err
	}
	return figures{"time": float64(time.Since(start)) / float64(time.Millisecond)}, nil
}

// spaceRaw starts an embedded nats-server with JetStream, connects two clients, creates one
// memory stream, closes the clients and shuts down.
func spaceRaw(ctx context.Context, _ int) (figures, error) {
	start := time.Now()
	srv, err := startBare()
	if err != nil {
		return nil, err
	}
	defer srv.shutdown()
	var conns []*nats.Conn
	defer func() {
		for _, nc := range conns {
			nc.Close()
		}
	}()
	for range 2 {
		nc, err := nats.Connect("", nats.InProcessServer(srv.srv))
		if err != nil {
			return nil, err
		}
		conns = append(conns, nc)
	}
	js, err := jetstream.New(conns[0])
	if err != nil {
		return nil, err
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "RAW", Subjects: []string{"raw.>"},
		Storage: jetstream.MemoryStorage}); err != nil {
		return nil, err
	}
	for _, nc := range conns {
		nc.Close()
	}
	srv.shutdown()
	return figures{"time": float64(time.Since(start)) / float64(time.Millisecond)}, nil
}
