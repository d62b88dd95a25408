package broker

import (
	"context"
	"testing"
	"time"
)

// BenchmarkStartStop measures one Start and Shutdown of a memory mesh without a listener:
// the fixed cost a test pays for its own space.
func BenchmarkStartStop(b *testing.B) {
	cfg := operatorConfig(newTestTrust(b))
	ctx := context.Background()
	var startTotal time.Duration
	for b.Loop() {
		begin := time.Now()
		br, err := Start(ctx, cfg)
		if err != nil {
			b.Fatalf("Start: %v", err)
		}
		startTotal += time.Since(begin)
		if err := br.Shutdown(ctx); err != nil {
			b.Fatalf("Shutdown: %v", err)
		}
	}
	b.ReportMetric(float64(startTotal.Microseconds())/float64(b.N)/1000, "start-ms/op")
}
