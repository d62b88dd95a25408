package console

import (
	"fmt"
	"html/template"
	"sort"
	"strings"
	"sync"
	"time"
)

// sampleEvery is the plots' resolution; samplesKept of them cover the last ten minutes.
const (
	sampleEvery = 5 * time.Second
	samplesKept = 120
)

// plotted is how many channels the rate plot draws: the busiest over its window, one line
// per colour of the palette. The legend counts the others.
const plotted = 7

// sample is one point of the plots: the live messages per channel since the sample before
// (only channels that had some, so a sample costs the traffic, not the channels), and the
// backstop's lag (CHAT messages behind the fan-out plus INBOX entries behind the reader).
type sample struct {
	at     time.Time
	counts map[string]uint64
	lag    uint64
}

// sampler keeps the last samplesKept samples.
type sampler struct {
	mu      sync.Mutex
	samples []sample
}

func newSampler() *sampler { return &sampler{} }

// take records the live messages of ss since the last sample and its lag.
func (s *sampler) take(ss *spaceState) {
	smp := sample{at: time.Now(), counts: ss.feed.drain()}
	if stats, err := ss.m.DeliveryStats(ss.name); err == nil {
		smp.lag = stats.FanoutLag + stats.ReaderLag
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples = append(s.samples, smp)
	if len(s.samples) > samplesKept {
		s.samples = s.samples[1:]
	}
}

// series is one line of a plot.
type series struct {
	Name   string
	Points []float64
}

// rates are the messages per minute between consecutive samples of the plotted busiest
// channels, by name, and how many other channels had messages in the window. The cost is
// the messages sampled plus a sort of the channels that had any, never channels × samples.
func (s *sampler) rates() ([]series, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	totals := map[string]uint64{}
	for _, smp := range s.samples {
		for ch, n := range smp.counts {
			totals[ch] += n
		}
	}
	names := make([]string, 0, len(totals))
	for ch := range totals {
		names = append(names, ch)
	}
	sort.Slice(names, func(i, j int) bool {
		if a, b := totals[names[i]], totals[names[j]]; a != b {
			return a > b
		}
		return names[i] < names[j]
	})
	more := max(len(names)-plotted, 0)
	names = names[:len(names)-more]
	sort.Strings(names)
	out := make([]series, 0, len(names))
	for _, ch := range names {
		sr := series{Name: ch}
		for i := 1; i < len(s.samples); i++ {
			sr.Points = append(sr.Points, perMinute(s.samples[i].counts[ch], s.samples[i].at.Sub(s.samples[i-1].at)))
		}
		out = append(out, sr)
	}
	return out, more
}

// rate is the last measured messages per minute of channel: two map reads.
func (s *sampler) rate(channel string) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.samples)
	if n < 2 {
		return 0
	}
	return perMinute(s.samples[n-1].counts[channel], s.samples[n-1].at.Sub(s.samples[n-2].at))
}

// perMinute is n messages in d as a rate per minute; 0 for an empty interval.
func perMinute(n uint64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Minutes()
}

// lag is the backstop lag series.
func (s *sampler) lag() series {
	s.mu.Lock()
	defer s.mu.Unlock()
	sr := series{Name: "backstop lag"}
	for _, smp := range s.samples {
		sr.Points = append(sr.Points, float64(smp.lag))
	}
	return sr
}

// palette colours plot lines; each line is also named in the legend, in text.
var palette = []string{"#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4b5563"}

// plotWidth and plotHeight are the SVG's coordinate box; CSS scales it to the window.
const plotWidth, plotHeight = 600.0, 120.0

// svgPlot draws lines as an inline SVG polyline chart over samplesKept points, scaled to the
// largest value, with the maximum written as text.
func svgPlot(title, unit string, lines []series) template.HTML {
	top := 1.0
	for _, l := range lines {
		for _, p := range l.Points {
			top = max(top, p)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="plot" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s">`,
		plotWidth, plotHeight+14, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<line x1="0" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#9ca3af"/>`, plotHeight, plotWidth, plotHeight)
	fmt.Fprintf(&b, `<text x="2" y="10" font-size="10" fill="#374151">max %.1f %s</text>`, top, template.HTMLEscapeString(unit))
	step := plotWidth / float64(samplesKept-1)
	for i, l := range lines {
		var pts strings.Builder
		x0 := plotWidth - step*float64(len(l.Points)-1)
		for j, p := range l.Points {
			fmt.Fprintf(&pts, "%.1f,%.1f ", x0+step*float64(j), plotHeight-p/top*(plotHeight-14))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke-width="2" stroke="%s" points="%s"><title>%s</title></polyline>`,
			palette[i%len(palette)], pts.String(), template.HTMLEscapeString(l.Name))
	}
	fmt.Fprintf(&b, `<text x="2" y="%.0f" font-size="10" fill="#374151">last %d min</text></svg>`,
		plotHeight+12, int(sampleEvery*samplesKept/time.Minute))
	return template.HTML(b.String())
}

// legend pairs each line's colour with its name.
type legendEntry struct {
	Name   string
	Colour string
}

func legend(lines []series) []legendEntry {
	out := make([]legendEntry, len(lines))
	for i, l := range lines {
		out[i] = legendEntry{Name: l.Name, Colour: palette[i%len(palette)]}
	}
	return out
}
