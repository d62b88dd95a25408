package bench

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Summary is the median and spread of one figure over several runs.
type Summary struct {
	Median, Min, Max float64
	// Runs is how many values the summary is over; zero means not measured.
	Runs int
}

// summarize returns the median, minimum and maximum of values.
func summarize(values []float64) Summary {
	if len(values) == 0 {
		return Summary{}
	}
	v := slices.Clone(values)
	slices.Sort(v)
	mid := len(v) / 2
	med := v[mid]
	if len(v)%2 == 0 {
		med = (v[mid-1] + v[mid]) / 2
	}
	return Summary{Median: med, Min: v[0], Max: v[len(v)-1], Runs: len(v)}
}

// percentile returns the p-th percentile (0–100) of samples by the nearest-rank method.
func percentile(samples []time.Duration, p float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// Goal says which direction of a ratio is better, and where the target lies.
type Goal int

// The goals a Target can have.
const (
	// AtLeast: the ratio cotal/raw must be at least the target (throughput).
	AtLeast Goal = iota
	// AtMost: the ratio cotal/raw must be at most the target (time, memory).
	AtMost
	// Below: cotal's own value must be below the target (an absolute budget).
	Below
)

// Target is what a row must reach.
type Target struct {
	Goal  Goal
	Value float64
	// VsJSON judges the ratio against raw + encoding/json instead of bare raw: what
	// hand-rolled NATS carrying the same envelopes pays.
	VsJSON bool
}

// String renders the target the way BENCHMARKS.md shows it.
func (t Target) String() string {
	var s string
	switch t.Goal {
	case AtLeast:
		s = fmt.Sprintf("≥ %.2g", t.Value)
	case AtMost:
		s = fmt.Sprintf("≤ %.2g×", t.Value)
	default:
		return fmt.Sprintf("< %.3g", t.Value)
	}
	if t.VsJSON {
		s += " of raw+json"
	}
	return s
}

// Row is one line of the results table: one figure of one workload case, for cotal and raw.
type Row struct {
	// Workload is the workload's title, such as "2. DM".
	Workload string
	// Case says what varies inside the workload: payload, fan-out, storage.
	Case string
	// Key is a short name of the figure, such as "rate" or "p99", for Go benchmark metrics.
	Key string
	// Metric names the figure and Unit its unit.
	Metric, Unit string
	// Cotal and Raw are the figure for each side; Raw.Runs is zero where there is no raw side.
	Cotal, Raw Summary
	// RawJSON is the raw side whose receivers decode cotal's envelope with encoding/json;
	// Runs is zero where the workload has no such side. The ratio stays cotal over bare Raw.
	RawJSON Summary
	// Target is nil for figures reported without a target.
	Target *Target
	// Note is a short remark shown beside the row, such as what did not fit.
	Note string
}

// Ratio is cotal's median over raw's, or NaN without a raw side.
func (r Row) Ratio() float64 {
	if r.Raw.Runs == 0 || r.Raw.Median == 0 {
		return math.NaN()
	}
	return r.Cotal.Median / r.Raw.Median
}

// RatioJSON is cotal's median over raw + encoding/json's, or NaN without that side.
func (r Row) RatioJSON() float64 {
	if r.RawJSON.Runs == 0 || r.RawJSON.Median == 0 {
		return math.NaN()
	}
	return r.Cotal.Median / r.RawJSON.Median
}

// judged is the ratio the row's target is judged on.
func (r Row) judged() float64 {
	if r.Target != nil && r.Target.VsJSON {
		return r.RatioJSON()
	}
	return r.Ratio()
}

// Met reports whether the row reaches its target; rows without one always do.
func (r Row) Met() bool {
	if r.Target == nil {
		return true
	}
	switch r.Target.Goal {
	case AtLeast:
		return r.judged() >= r.Target.Value
	case AtMost:
		return r.judged() <= r.Target.Value
	default:
		return r.Cotal.Runs > 0 && r.Cotal.Median < r.Target.Value
	}
}
