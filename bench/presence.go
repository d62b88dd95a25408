package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/retry"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/wire"
)

const (
	titlePresence = "6. Presence"
	titleMemory   = "8. Memory"
	// presenceTarget is the budget for 1 000 heartbeating endpoints: under 10 % of one core.
	presenceTarget = 10
	// connectConcurrency bounds how many endpoints of a burst connect at once.
	connectConcurrency = 32
	// cpuWindow is how many heartbeats the CPU share is measured over.
	cpuWindow = 3
)

var (
	figPresenceCPU = figure{key: "cpu", metric: "process CPU, heartbeating", unit: "% of a core",
		target: &Target{Goal: Below, Value: presenceTarget}}
	figConvergence = figure{key: "converge", metric: "roster convergence after a burst of joins", unit: "ms"}
	figHeap        = figure{key: "heap", metric: "heap per connected idle endpoint", unit: "KiB",
		target: &Target{Goal: AtMost, Value: 2}}
)

// fleetSample is one fleet run's figures for both sides, or why the run did not finish.
type fleetSample struct {
	cotal, raw figures
	err        error
}

func presenceCases(c Config) []Case {
	var out []Case
	for _, n := range c.Endpoints {
		out = append(out, Case{Name: fmt.Sprintf("%d endpoints", n), run: func(ctx context.Context, s *suite) ([]Row, error) {
			return s.fleetRows(ctx, titlePresence, n, []figure{figPresenceCPU, figConvergence})
		}})
	}
	return out
}

func memoryCases(c Config) []Case {
	var out []Case
	for _, n := range c.Endpoints {
		out = append(out, Case{Name: fmt.Sprintf("%d endpoints", n), run: func(ctx context.Context, s *suite) ([]Row, error) {
			return s.fleetRows(ctx, titleMemory, n, []figure{figHeap})
		}})
	}
	return out
}

// fleetRows reports figs of the fleet runs of size n, measuring them on first use: the
// presence and memory workloads are two views of the same runs.
func (s *suite) fleetRows(ctx context.Context, title string, n int, figs []figure) ([]Row, error) {
	if _, ok := s.fleets[n]; !ok {
		s.fleets[n] = s.fleetRuns(ctx, n)
	}
	var note string
	for _, sm := range s.fleets[n] {
		if sm.err != nil {
			note = "a run did not finish: " + sm.err.Error()
		}
	}
	rows := make([]Row, 0, len(figs))
	for _, f := range figs {
		var c, r []float64
		for _, sm := range s.fleets[n] {
			if v, ok := sm.cotal[f.key]; ok {
				c = append(c, v)
			}
			if v, ok := sm.raw[f.key]; ok {
				r = append(r, v)
			}
		}
		rows = append(rows, Row{Workload: title, Case: fmt.Sprintf("%d endpoints", n), Key: f.key,
			Metric: f.metric, Unit: f.unit, Cotal: summarize(c), Raw: summarize(r), Target: f.target,
			Note: note})
	}
	return rows, nil
}

// fleetRuns runs the fleet of n s.cfg.Runs times. A run that does not finish is kept with its
// error, so the report says what did not fit instead of dropping the row, and the remaining
// runs are skipped: a fleet too large for the machine fails the same way every time.
func (s *suite) fleetRuns(ctx context.Context, n int) []fleetSample {
	var samples []fleetSample
	for run := range s.cfg.Runs {
		f, err := s.fleet(ctx, n)
		if err != nil {
			s.cfg.logger().Warn("fleet run did not finish", "endpoints", n, "run", run+1, "err", err)
			return append(samples, fleetSample{err: err})
		}
		s.cfg.logger().Info("run", "workload", "fleet", "endpoints", n, "run", run+1,
			"cotal", formatFigures(f.cotal), "raw", formatFigures(f.raw))
		samples = append(samples, f)
	}
	return samples
}

// fleet runs n endpoints with minted credentials on an authenticated mesh, the real product:
// a burst of connects, the time until every roster lists all n online (SPEC §6), the
// process's CPU share over cpuWindow heartbeats once settled, and the heap per endpoint. The
// raw side is n bare connections, then a KV put loop at the fleet's heartbeat rate. The mesh
// is closed before the raw side starts, so that what its closing frees in the background
// does not count against the raw side's heap.
func (s *suite) fleet(ctx context.Context, n int) (fleetSample, error) {
	cotal, err := cotalFleet(ctx, n)
	if err != nil {
		return fleetSample{}, err
	}
	raw, err := rawFleet(ctx, n)
	if err != nil {
		return fleetSample{}, err
	}
	return fleetSample{cotal: cotal, raw: raw}, nil
}

// cotalFleet is the cotal side of a fleet run, on a mesh of its own.
func cotalFleet(ctx context.Context, n int) (figures, error) {
	env, err := newEnv(ctx, envOptions{auth: true})
	if err != nil {
		return nil, err
	}
	defer env.close()
	creds := make([][]byte, n)
	for i := range creds {
		cred, err := env.mesh.Mint(ctx, provisioner.MintRequest{Space: benchSpace, Name: fmt.Sprintf("agent%d", i),
			Profile: provisioner.ProfileAgent, NoExpiry: true})
		if err != nil {
			return nil, err
		}
		if creds[i], err = cred.Creds(); err != nil {
			return nil, err
		}
	}
	before, err := settledHeap(ctx)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	eps, err := connectBurst(ctx, env, creds)
	defer closeConcurrently(eps)
	if err != nil {
		return nil, err
	}
	if err := awaitRosters(ctx, eps); err != nil {
		return nil, err
	}
	converged := time.Since(start)
	f := figures{figConvergence.key: float64(converged) / float64(time.Millisecond)}
	if err := retry.Sleep(ctx, wire.DefaultHeartbeat); err != nil {
		return nil, err
	}
	if cpu, ok := cpuShare(ctx, cpuWindow*wire.DefaultHeartbeat); ok {
		f[figPresenceCPU.key] = cpu
	}
	after, err := settledHeap(ctx)
	if err != nil {
		return nil, err
	}
	f[figHeap.key] = kibPer(before, after, len(eps))
	runtime.KeepAlive(eps)
	return f, nil
}

// connectBurst connects one Endpoint per credential, connectConcurrency at a time.
func connectBurst(ctx context.Context, env *env, creds [][]byte) ([]*endpoint.Endpoint, error) {
	eps := make([]*endpoint.Endpoint, len(creds))
	errs := make([]error, len(creds))
	sem := make(chan struct{}, connectConcurrency)
	var wg sync.WaitGroup
	for i, c := range creds {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			eps[i], errs[i] = endpoint.Connect(ctx, endpoint.Options{InProcess: env.mesh.InProcess(),
				Space: benchSpace, Creds: c})
		})
	}
	wg.Wait()
	var connected []*endpoint.Endpoint
	for _, ep := range eps {
		if ep != nil {
			connected = append(connected, ep)
		}
	}
	return connected, errors.Join(errs...)
}

// awaitRosters waits until every endpoint's roster lists every endpoint online. Progress is
// the number of online peers the unconverged rosters list, so a slow burst is not a stall.
func awaitRosters(ctx context.Context, eps []*endpoint.Endpoint) error {
	left := eps
	var seen int64
	return await(ctx, "rosters converged", func() int64 { return seen }, func() (bool, error) {
		var still []*endpoint.Endpoint
		seen = 0
		for _, ep := range left {
			online := 0
			for _, p := range ep.Roster().Snapshot() {
				if p.Online {
					online++
				}
			}
			if online < len(eps) {
				still = append(still, ep)
				seen += int64(online)
			}
		}
		left = still
		return len(left) == 0, nil
	})
}

func closeConcurrently(eps []*endpoint.Endpoint) {
	ctx, cancel := context.WithTimeout(context.Background(), closeBudget)
	defer cancel()
	var wg sync.WaitGroup
	for _, ep := range eps {
		wg.Go(func() { _ = ep.Close(ctx) })
	}
	wg.Wait()
}

// rawFleet is the raw side of a fleet run, on a bare server in the same process (the
// authenticated mesh has no account a raw connection could use): the heap of n bare
// in-process connections, then the CPU share of one connection putting n keys per heartbeat
// into a KV bucket with the presence bucket's TTL, the fleet's write rate.
func rawFleet(ctx context.Context, n int) (figures, error) {
	srv, err := startBare()
	if err != nil {
		return nil, err
	}
	defer srv.shutdown()
	before, err := settledHeap(ctx)
	if err != nil {
		return nil, err
	}
	conns := make([]*nats.Conn, 0, n)
	defer func() {
		for _, nc := range conns {
			nc.Close()
		}
	}()
	for range n {
		nc, err := nats.Connect("", nats.InProcessServer(srv.srv))
		if err != nil {
			return nil, fmt.Errorf("raw connection: %w", err)
		}
		conns = append(conns, nc)
	}
	// Each connection must be up on the server's side too before the heap is read, as each
	// endpoint is once the rosters have converged.
	for _, nc := range conns {
		if err := nc.Flush(); err != nil {
			return nil, fmt.Errorf("raw connection: %w", err)
		}
	}
	after, err := settledHeap(ctx)
	if err != nil {
		return nil, err
	}
	f := figures{figHeap.key: kibPer(before, after, n)}
	js, err := jetstream.New(conns[0])
	if err != nil {
		return nil, err
	}
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "rawpresence",
		TTL: wire.DefaultLivenessWindow, Storage: jetstream.MemoryStorage})
	if err != nil {
		return nil, err
	}
	loopCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	wg.Go(func() { putLoop(loopCtx, kv, n) })
	if err := retry.Sleep(ctx, wire.DefaultHeartbeat); err != nil {
		return nil, err
	}
	if cpu, ok := cpuShare(ctx, cpuWindow*wire.DefaultHeartbeat); ok {
		f[figPresenceCPU.key] = cpu
	}
	return f, nil
}

// putLoop puts key i%n every heartbeat/n until ctx ends: n keys refreshed every heartbeat.
func putLoop(ctx context.Context, kv jetstream.KeyValue, n int) {
	value := []byte(`{"status":"idle"}`)
	t := time.NewTicker(wire.DefaultHeartbeat / time.Duration(n))
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_, _ = kv.Put(ctx, fmt.Sprintf("k%d", i%n), value)
	}
}

// heapReads is how many times liveHeap reads the heap; it keeps the smallest reading.
const heapReads = 3

// settleStep is how far apart settledHeap's readings are, and settleReads the most it takes.
const (
	settleStep  = 250 * time.Millisecond
	settleReads = 40
)

// settledHeap is liveHeap once it has stopped changing: two readings settleStep apart agree
// within 1 %. A mesh goes on working for seconds after the mints it was asked for return (the
// on-create check of each consumer they made, a registry read each), and what that work holds
// would otherwise count in the baseline. After settleReads readings it takes the last.
func settledHeap(ctx context.Context) (uint64, error) {
	prev := liveHeap()
	for range settleReads {
		if err := retry.Sleep(ctx, settleStep); err != nil {
			return 0, err
		}
		cur := liveHeap()
		if math.Abs(float64(cur)-float64(prev)) <= float64(prev)/100 {
			return min(prev, cur), nil
		}
		prev = cur
	}
	return prev, nil
}

// liveHeap is the heap the process's live objects occupy: the smallest of heapReads
// readings of runtime/metrics' /gc/heap/live:bytes, each right after a forced collection
// (debug.FreeOSMemory collects and returns freed memory to the OS). Whatever a background
// goroutine happens to hold at one reading, a message in flight or a buffer being filled,
// can only add to it, so the smallest reading is the steady heap.
func liveHeap() uint64 {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	least := uint64(math.MaxUint64)
	for range heapReads {
		runtime.GC()
		debug.FreeOSMemory()
		metrics.Read(sample)
		least = min(least, sample[0].Value.Uint64())
	}
	return least
}

// kibPer is the heap growth from before to after in KiB per n.
func kibPer(before, after uint64, n int) float64 {
	return (float64(after) - float64(before)) / 1024 / float64(n)
}
