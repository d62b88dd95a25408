package space_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
)

// reportMedian reports the median of samples as ms/op-median, the figure the notes use: a mean
// hides the one slow start a loaded machine produces.
func reportMedian(b *testing.B, samples []time.Duration) {
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	b.ReportMetric(float64(samples[len(samples)/2].Microseconds())/1000, "ms-median")
}

// BenchmarkPerTestSpace starts a whole per-test mesh (key store, broker in operator mode,
// provisioning, delivery loops) and closes it again.
func BenchmarkPerTestSpace(b *testing.B) {
	var samples []time.Duration
	for b.Loop() {
		t0 := time.Now()
		m, err := space.Start(context.Background(), space.Options{Memory: true})
		if err != nil {
			b.Fatal(err)
		}
		samples = append(samples, time.Since(t0))
		if err := m.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	reportMedian(b, samples)
}

// BenchmarkEndpointConnect measures an in-process Endpoint's Connect: mint, bind consumers,
// first presence, roster watch, one channel joined with its history read.
func BenchmarkEndpointConnect(b *testing.B) {
	m := spacetest.New(b)
	ctx := context.Background()
	var samples []time.Duration
	for b.Loop() {
		t0 := time.Now()
		ep, err := m.Endpoint(ctx, space.AgentSpec{Name: "bench", Grants: provisioner.Grants{Subscribe: []string{"general"}}})
		if err != nil {
			b.Fatal(err)
		}
		samples = append(samples, time.Since(t0))
		if err := ep.Close(ctx); err != nil {
			b.Fatal(err)
		}
	}
	reportMedian(b, samples)
}
