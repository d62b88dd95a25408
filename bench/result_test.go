package bench

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	tests := []struct {
		name   string
		values []float64
		want   Summary
	}{
		{"no values summarize to nothing measured", nil, Summary{}},
		{"one value is its own median and spread", []float64{7}, Summary{7, 7, 7, 1}},
		{"an odd count takes the middle value", []float64{9, 1, 5}, Summary{5, 1, 9, 3}},
		{"an even count averages the two middle values", []float64{4, 1, 3, 2}, Summary{2.5, 1, 4, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := summarize(tt.values); got != tt.want {
				t.Errorf("summarize(%v) = %+v, want %+v", tt.values, got, tt.want)
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	var samples []time.Duration
	for i := 100; i >= 1; i-- {
		samples = append(samples, time.Duration(i)*time.Millisecond)
	}
	tests := []struct {
		name string
		p    float64
		want time.Duration
	}{
		{"the median of 1..100 ms is 50 ms", 50, 50 * time.Millisecond},
		{"the 99th percentile of 1..100 ms is 99 ms", 99, 99 * time.Millisecond},
		{"the 100th percentile is the maximum", 100, 100 * time.Millisecond},
		{"the 0th percentile is the minimum", 0, time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(samples, tt.p); got != tt.want {
				t.Errorf("percentile(%v) = %v, want %v", tt.p, got, tt.want)
			}
		})
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("percentile of no samples = %v, want 0", got)
	}
}

func TestRowMet(t *testing.T) {
	s := func(v float64) Summary { return Summary{Median: v, Min: v, Max: v, Runs: 3} }
	tests := []struct {
		name string
		row  Row
		want bool
	}{
		{"a throughput ratio at the target meets it", Row{Cotal: s(90), Raw: s(100), Target: &Target{Goal: AtLeast, Value: 0.9}}, true},
		{"a throughput ratio under the target misses", Row{Cotal: s(50), Raw: s(100), Target: &Target{Goal: AtLeast, Value: 0.8}}, false},
		{"a time ratio within the bound meets it", Row{Cotal: s(30), Raw: s(10), Target: &Target{Goal: AtMost, Value: 3}}, true},
		{"a time ratio past the bound misses", Row{Cotal: s(31), Raw: s(10), Target: &Target{Goal: AtMost, Value: 3}}, false},
		{"an absolute budget is judged on cotal alone", Row{Cotal: s(9), Target: &Target{Goal: Below, Value: 10}}, true},
		{"an absolute budget not measured misses", Row{Target: &Target{Goal: Below, Value: 10}}, false},
		{"a row without a target always meets it", Row{Cotal: s(1), Raw: s(100)}, true},
		{"a ratio without a raw side misses a ratio target", Row{Cotal: s(1), Target: &Target{Goal: AtLeast, Value: 0.5}}, false},
		{"a target against raw+json ignores bare raw", Row{Cotal: s(90), Raw: s(200), RawJSON: s(90),
			Target: &Target{Goal: AtLeast, Value: 1, VsJSON: true}}, true},
		{"a target against raw+json misses below it", Row{Cotal: s(80), Raw: s(80), RawJSON: s(90),
			Target: &Target{Goal: AtLeast, Value: 1, VsJSON: true}}, false},
		{"a cost bound against raw+json", Row{Cotal: s(13), Raw: s(5), RawJSON: s(10),
			Target: &Target{Goal: AtMost, Value: 1.2, VsJSON: true}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.row.Met(); got != tt.want {
				t.Errorf("Met() = %v, want %v (ratio %v)", got, tt.want, tt.row.Ratio())
			}
		})
	}
	if r := (Row{Cotal: s(1)}).Ratio(); !math.IsNaN(r) {
		t.Errorf("Ratio without a raw side = %v, want NaN", r)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		field  string
	}{
		{"no runs is refused", func(c *Config) { c.Runs = 0 }, "Runs"},
		{"no payloads are refused", func(c *Config) { c.Payloads = nil }, "Payloads"},
		{"a zero payload is refused", func(c *Config) { c.Payloads = []int{128, 0} }, "Payloads"},
		{"no messages are refused", func(c *Config) { c.Messages = 0 }, "Messages"},
		{"an empty backfill is refused", func(c *Config) { c.Backfill = 0 }, "Backfill"},
		{"an empty burst is refused", func(c *Config) { c.Burst = 0 }, "Burst"},
		{"a fleet of one is refused", func(c *Config) { c.Endpoints = []int{1} }, "Endpoints"},
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig is invalid: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.change(&c)
			err := c.Validate()
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.field) {
				t.Errorf("Validate() = %v, want ErrInvalidConfig naming %s", err, tt.field)
			}
		})
	}
}

func TestMarkdownListsMissesWithTheirNotes(t *testing.T) {
	s := func(v float64) Summary { return Summary{Median: v, Min: v, Max: v, Runs: 3} }
	rows := []Row{
		{Workload: titleDM, Case: "128 B", Metric: "surfaced+acked msgs/s", Unit: "msgs/s",
			Cotal: s(50), Raw: s(100), Target: &Target{Goal: AtLeast, Value: 0.8}},
		{Workload: titleAnycast, Case: "128 B", Metric: "surfaced+acked msgs/s", Unit: "msgs/s",
			Cotal: s(90), Raw: s(100), Target: &Target{Goal: AtLeast, Value: 0.8}},
	}
	var b strings.Builder
	if err := WriteMarkdown(&b, Meta{Commit: "abc123", Command: "cotal bench", Config: DefaultConfig()}, rows); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"| commit | abc123 |", "`cotal bench`", "| 0.50 | ≥ 0.8 | **no** |",
		"| 0.90 | ≥ 0.8 | yes |", "- 2. DM, 128 B: surfaced+acked msgs/s at cotal/raw 0.50, target ≥ 0.8."} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "- 3. Anycast") {
		t.Errorf("report lists a row that meets its target as a miss:\n%s", out)
	}
}

func TestPayloadHasTheExactSize(t *testing.T) {
	for _, size := range []int{1, 128, 1024, 4096} {
		if got := len(payload(size)); got != size {
			t.Errorf("len(payload(%d)) = %d", size, got)
		}
	}
}

func TestWriteJSON(t *testing.T) {
	s := func(v float64) Summary { return Summary{Median: v, Min: v, Max: v, Runs: 3} }
	rows := []Row{
		{Workload: "1. Live multicast", Case: "128 B, 1→1", Metric: "delivered msgs/s", Unit: "msgs/s",
			Cotal: s(50), Raw: s(100), RawJSON: s(80), Target: &Target{Goal: AtLeast, Value: 0.9}},
		{Workload: "10. Durable join", Case: "memory", Metric: "p50", Unit: "ms", Cotal: s(3)},
	}
	var b strings.Builder
	if err := WriteJSON(&b, rows); err != nil {
		t.Fatal(err)
	}
	want := `{"workload":"1. Live multicast","case":"128 B, 1→1","metric":"delivered msgs/s","unit":"msgs/s",` +
		`"cotal":50,"raw":100,"raw_json":80,"ratio":0.5,"ratio_json":0.625,"target":"≥ 0.9","met":false}` + "\n" +
		`{"workload":"10. Durable join","case":"memory","metric":"p50","unit":"ms",` +
		`"cotal":3,"raw":null,"raw_json":null,"ratio":null,"ratio_json":null,"target":null,"met":null}` + "\n"
	if b.String() != want {
		t.Errorf("WriteJSON wrote\n%s\nwant\n%s", b.String(), want)
	}
}

func TestThePathWorkloadNeedsARemoteMesh(t *testing.T) {
	if _, err := Run(context.Background(), DefaultConfig(), "path"); !errors.Is(err, errNoRemote) {
		t.Fatalf("Run path without Remote: %v, want errNoRemote", err)
	}
	if cases := pathCases(DefaultConfig()); len(cases) != 0 {
		t.Fatalf("path cases without Remote: %d, want none", len(cases))
	}
}
