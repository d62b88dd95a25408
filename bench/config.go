package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
)

// Config sizes a suite run. DefaultConfig is what `cotal bench` and `make bench` use.
type Config struct {
	// Runs is how many times each side of each case runs; figures are medians over them
	// with the spread beside them. At least 1; BENCHMARKS.md uses 3.
	Runs int
	// Payloads are the text sizes in bytes each data-path workload runs with.
	Payloads []int
	// Messages is how many messages one throughput run publishes (multicast, DM, anycast).
	Messages int
	// DurableMessages is how many messages one durable-channel or sync-mode run publishes.
	DurableMessages int
	// LatencyRounds is how many messages one latency run sends, one in flight at a time.
	LatencyRounds int
	// Backfill is how many retained messages a join replays; default 10 000.
	Backfill int
	// Burst is how many DMs the path workload's sustained case sends as fast as the mesh
	// stores them; default 30 000, more than a mesh syncing every write stores in 5 s.
	Burst int
	// Endpoints are the fleet sizes of the presence and memory workloads.
	Endpoints []int
	// Logger, if set, is told about each run as it finishes.
	Logger *slog.Logger
	// Remote starts a mesh in a process of its own for the path workload, which has no
	// cases without it.
	Remote func(ctx context.Context, o RemoteOptions) (Remote, error)
}

// DefaultConfig is the suite BENCHMARKS.md is generated with: it fits in a few minutes on
// two shared cores.
func DefaultConfig() Config {
	return Config{
		Runs:            3,
		Payloads:        []int{128, 1024},
		Messages:        2000,
		DurableMessages: 1000,
		LatencyRounds:   200,
		Backfill:        10000,
		Burst:           30000,
		Endpoints:       []int{100, 200},
	}
}

// ErrInvalidConfig is returned by Config.Validate; the message names the field.
var ErrInvalidConfig = errors.New("invalid bench config")

// Validate checks every field and names the one to fix.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	switch {
	case c.Runs < 1:
		return bad("Runs is %d: run each side at least once", c.Runs)
	case len(c.Payloads) == 0 || slices.Min(c.Payloads) < 1:
		return bad("Payloads %v: give at least one positive size", c.Payloads)
	case c.Messages < 1, c.DurableMessages < 1, c.LatencyRounds < 1:
		return bad("Messages, DurableMessages and LatencyRounds must be positive")
	case c.Backfill < 1:
		return bad("Backfill is %d: replay at least one message", c.Backfill)
	case c.Burst < 1:
		return bad("Burst is %d: send at least one DM", c.Burst)
	case len(c.Endpoints) == 0 || slices.Min(c.Endpoints) < 2:
		return bad("Endpoints %v: give fleet sizes of at least 2", c.Endpoints)
	}
	return nil
}

func (c Config) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.New(slog.DiscardHandler)
}
