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

// sample is one point of the plots: cumulative live messages per channel, and the backstop's
// lag (CHAT messages behind the fan-out plus INBOX entries behind the reader).
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

// take records the current counts and lag of ss.
func (s *sampler) take(ss *spaceState) {
	smp := sample{at: time.Now(), counts: ss.feed.channelCounts()}
	if d, err := ss.m.Delivery(ss.name); err == nil {
		stats := d.Stats()
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

// rates are the messages per minute of every channel between consecutive samples.
func (s *sampler) rates() []series {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := map[string]bool{}
	for _, smp := range s.samples {
		for ch := range smp.counts {
			names[ch] = true
		}
	}
	var out []series
	for ch := range names {
		sr := series{Name: ch}
		for i := 1; i < len(s.samples); i++ {
			a, b := s.samples[i-1], s.samples[i]
			perMin := float64(b.counts[ch]-a.counts[ch]) / b.at.Sub(a.at).Minutes()
			sr.Points = append(sr.Points, perMin)
		}
		out = append(out, sr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// rate is the last measured messages per minute of channel.
func (s *sampler) rate(channel string) float64 {
	for _, sr := range s.rates() {
		if sr.Name == channel && len(sr.Points) > 0 {
			return sr.Points[len(sr.Points)-1]
		}
	}
	return 0
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
