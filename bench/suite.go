package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ErrUnknownWorkload is returned by Run for a workload name not in Workloads.
var ErrUnknownWorkload = errors.New("unknown workload")

// Workload is one row group of the results table.
type Workload struct {
	// Name is how the command line selects it, such as "dm".
	Name string
	// Title is its heading in the table, such as "2. DM".
	Title string
	// Summary says in one line what it measures.
	Summary string
	cases   func(Config) []Case
}

// Case is one configuration of a workload (a payload size, a fan-out, a storage mode).
type Case struct {
	// Name identifies the case inside its workload, such as "128 B, 1→10".
	Name string
	run  func(ctx context.Context, s *suite) ([]Row, error)
}

// Cases lists the workload's cases under c.
func (w Workload) Cases(c Config) []Case { return w.cases(c) }

// Run measures the case and returns its rows.
func (cs Case) Run(ctx context.Context, c Config) ([]Row, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return newSuite(c).runCase(ctx, cs)
}

// caseTimeout bounds one case, all its runs included: a wedged run fails the suite instead of
// hanging it.
const caseTimeout = 5 * time.Minute

func (s *suite) runCase(ctx context.Context, cs Case) ([]Row, error) {
	ctx, cancel := context.WithTimeout(ctx, caseTimeout)
	defer cancel()
	return cs.run(ctx, s)
}

// Workloads lists every workload in table order.
func Workloads() []Workload {
	return []Workload{
		{"multicast", titleMulticast, "1 publisher to 1 and to 10 subscribers on a live channel", multicastCases},
		{"dm", titleDM, "1 sender to 1 receiver, surfaced and acked", dmCases},
		{"anycast", titleAnycast, "1 sender to 4 workers sharing a role", anycastCases},
		{"durable", titleDurable, "1 publisher to 10 members through the durable backstop", durableCases},
		{"backfill", titleBackfill, "join replaying the channel's retained history", backfillCases},
		{"presence", titlePresence, "a fleet of endpoints heartbeating in one process", presenceCases},
		{"space", titleSpace, "start a per-test space, connect two endpoints, close", spaceCases},
		{"memory", titleMemory, "heap per connected idle endpoint", memoryCases},
		{"sync", titleSync, "DM and durable channel on file storage, sync always and interval", syncCases},
		{"join", titleJoin, "50 endpoints joining durable channels at once under publish load", joinCases},
		{"cluster", titleCluster, "DM from node 1 to node 3 of a three-node R3 cluster against one node", clusterCases},
		{"path", titlePath, "multicast, DM and anycast through `cotal up` over TCP with minted credentials", pathCases},
	}
}

// Names lists the workload names in table order.
func Names() []string {
	var out []string
	for _, w := range Workloads() {
		out = append(out, w.Name)
	}
	return out
}

// Run measures the named workloads (every workload when names is empty) in table order and
// returns their rows. The presence and memory workloads share their fleet measurements.
func Run(ctx context.Context, c Config, names ...string) ([]Row, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	for _, n := range names {
		if !slices.Contains(Names(), n) {
			return nil, fmt.Errorf("%w %q: choose from %s", ErrUnknownWorkload, n, strings.Join(Names(), ", "))
		}
		if n == "path" && c.Remote == nil {
			return nil, errNoRemote
		}
	}
	s := newSuite(c)
	var rows []Row
	for _, w := range Workloads() {
		if len(names) > 0 && !slices.Contains(names, w.Name) {
			continue
		}
		for _, cs := range w.cases(c) {
			r, err := s.runCase(ctx, cs)
			if err != nil {
				return rows, fmt.Errorf("%s, %s: %w", w.Title, cs.Name, err)
			}
			rows = append(rows, r...)
		}
	}
	return rows, nil
}

// suite is the state shared by the cases of one Run.
type suite struct {
	cfg    Config
	fleets map[int][]fleetSample // presence and memory runs by fleet size
}

func newSuite(c Config) *suite { return &suite{cfg: c, fleets: map[int][]fleetSample{}} }
