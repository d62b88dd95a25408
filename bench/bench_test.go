package bench

import (
	"context"
	"strings"
	"testing"
	"time"
)

// benchConfig sizes the Go benchmarks: each iteration is one run of each side of a case,
// small enough that -benchtime=1x finishes in seconds per case. `cotal bench` runs the
// full sizes.
func benchConfig(runs int) Config {
	c := DefaultConfig()
	c.Runs = runs
	c.Messages, c.DurableMessages, c.LatencyRounds = 1000, 300, 50
	c.Endpoints = []int{50}
	return c
}

// benchmarkWorkload runs every case of workload as a sub-benchmark, b.N runs per side, and
// reports each figure's median for cotal and raw and their ratio.
func benchmarkWorkload(b *testing.B, workload string) {
	for _, w := range Workloads() {
		if w.Name != workload {
			continue
		}
		for _, cs := range w.Cases(benchConfig(1)) {
			b.Run(metricName(cs.Name), func(b *testing.B) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				rows, err := cs.Run(ctx, benchConfig(b.N))
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range rows {
					unit := metricName(r.Key + "_" + r.Unit)
					b.ReportMetric(r.Cotal.Median, "cotal_"+unit)
					if r.Raw.Runs > 0 {
						b.ReportMetric(r.Raw.Median, "raw_"+unit)
						b.ReportMetric(r.Ratio(), "ratio_"+metricName(r.Key))
					}
					if r.RawJSON.Runs > 0 {
						b.ReportMetric(r.RawJSON.Median, "rawjson_"+unit)
					}
				}
			})
		}
	}
}

// metricName makes s usable as a benchmark or metric name: no spaces.
func metricName(s string) string {
	return strings.NewReplacer(" ", "", ",", "_", "→", "to", "%", "pct").Replace(s)
}

func BenchmarkMulticast(b *testing.B) { benchmarkWorkload(b, "multicast") }
func BenchmarkDM(b *testing.B)        { benchmarkWorkload(b, "dm") }
func BenchmarkAnycast(b *testing.B)   { benchmarkWorkload(b, "anycast") }
func BenchmarkDurable(b *testing.B)   { benchmarkWorkload(b, "durable") }
func BenchmarkBackfill(b *testing.B)  { benchmarkWorkload(b, "backfill") }
func BenchmarkPresence(b *testing.B)  { benchmarkWorkload(b, "presence") }
func BenchmarkSpace(b *testing.B)     { benchmarkWorkload(b, "space") }
func BenchmarkMemory(b *testing.B)    { benchmarkWorkload(b, "memory") }
func BenchmarkSync(b *testing.B)      { benchmarkWorkload(b, "sync") }
func BenchmarkJoin(b *testing.B)      { benchmarkWorkload(b, "join") }
func BenchmarkCluster(b *testing.B)   { benchmarkWorkload(b, "cluster") }
