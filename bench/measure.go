package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// figures are one run's results of one side, by figure key.
type figures map[string]float64

// side runs one side of a case once; run numbers the run, so that each run can use fresh
// channels, streams and consumers.
type side func(ctx context.Context, run int) (figures, error)

// figure describes one figure a case reports.
type figure struct {
	key, metric, unit string
	target            *Target
}

// The figures most workloads report.
var (
	figP50 = figure{key: "p50", metric: "p50 latency, one in flight", unit: "µs"}
	figP99 = figure{key: "p99", metric: "p99 latency, one in flight", unit: "µs"}
	// figCPU is the process's CPU time per message over the throughput run: on a shared
	// machine it says what a message costs even when other load stretches wall time.
	figCPU = figure{key: "cpu", metric: "process CPU per message", unit: "µs"}
)

func atLeast(v float64) *Target { return &Target{Goal: AtLeast, Value: v} }

// atLeastJSON is a throughput target against raw + encoding/json.
func atLeastJSON(v float64) *Target { return &Target{Goal: AtLeast, Value: v, VsJSON: true} }

// pair runs cotal and raw s.cfg.Runs times each, alternating which side goes first so that
// neither always runs on a warmer or more fragmented server, and returns one Row per figure.
// A nil raw side is a cotal-only figure: its rows have no raw side and no ratio.
func (s *suite) pair(ctx context.Context, title, caseName string, figs []figure, cotal, raw side) ([]Row, error) {
	return s.compare(ctx, title, caseName, figs, [3]side{cotal, raw, nil})
}

// sideNames name the sides compare runs: cotal, bare raw, raw decoding with encoding/json.
var sideNames = [3]string{"cotal", "raw", "raw+json"}

// compare runs each side that is not nil s.cfg.Runs times, rotating which side goes first
// from run to run, and returns one Row per figure.
func (s *suite) compare(ctx context.Context, title, caseName string, figs []figure, sides [3]side) ([]Row, error) {
	vals := map[string]*[3][]float64{}
	for _, f := range figs {
		vals[f.key] = &[3][]float64{}
	}
	for run := range s.cfg.Runs {
		for k := range 3 {
			i := (run + k) % 3
			if sides[i] == nil {
				continue
			}
			got, err := sides[i](ctx, run)
			if err != nil {
				return nil, fmt.Errorf("%s run %d: %w", sideNames[i], run+1, err)
			}
			for k, v := range got {
				if p, ok := vals[k]; ok {
					p[i] = append(p[i], v)
				}
			}
			s.cfg.logger().Info("run", "workload", title, "case", caseName, "side", sideNames[i],
				"run", run+1, "figures", formatFigures(got))
		}
	}
	rows := make([]Row, 0, len(figs))
	for _, f := range figs {
		v := vals[f.key]
		rows = append(rows, Row{Workload: title, Case: caseName, Key: f.key, Metric: f.metric,
			Unit: f.unit, Cotal: summarize(v[0]), Raw: summarize(v[1]), RawJSON: summarize(v[2]),
			Target: f.target})
	}
	return rows, nil
}

// formatFigures renders f for the progress log, keys sorted.
func formatFigures(f figures) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(f)) {
		fmt.Fprintf(&b, "%s=%.4g ", k, f[k])
	}
	return strings.TrimSpace(b.String())
}

// rate is count per second over d.
func rate(count int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(count) / d.Seconds()
}

// cpuMeter measures the process's CPU time from its creation.
type cpuMeter struct{ start time.Duration }

func startCPU() cpuMeter {
	c, _ := processCPU()
	return cpuMeter{start: c}
}

// perMessage sets f's figCPU figure to the CPU time used since m started, per message, when
// the platform reports CPU time.
func (m cpuMeter) perMessage(f figures, messages int64) {
	c, ok := processCPU()
	if ok && messages > 0 {
		f[figCPU.key] = micros(c-m.start) / float64(messages)
	}
}

// micros is d in microseconds.
func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// latencyFigures turns latency samples into the p50 and p99 figures.
func latencyFigures(f figures, samples []time.Duration) {
	f[figP50.key] = micros(percentile(samples, 50))
	f[figP99.key] = micros(percentile(samples, 99))
}

// payload is ASCII text of exactly size bytes.
func payload(size int) string {
	const alphabet = "the quick brown fox jumps over the lazy dog "
	var b strings.Builder
	for b.Len() < size {
		b.WriteString(alphabet)
	}
	return b.String()[:size]
}

// sizeName renders a payload size: 128 B, 1 KiB.
func sizeName(size int) string {
	if size%1024 == 0 {
		return fmt.Sprintf("%d KiB", size/1024)
	}
	return fmt.Sprintf("%d B", size)
}
