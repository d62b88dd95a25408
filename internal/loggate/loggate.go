// Package loggate paces log lines that a peer can provoke at will: a flood of refused or
// malformed input writes a line now and then, each carrying the count so far, instead of
// one line per message.
package loggate

import (
	"sync"
	"time"
)

// Interval is how often a gate admits a line unless told otherwise.
const Interval = 10 * time.Second

// Gate admits one line per interval. The zero Gate admits one per Interval. It is safe for
// concurrent use.
type Gate struct {
	interval time.Duration

	mu   sync.Mutex
	next time.Time // guarded by mu
}

// New returns a gate admitting one line per interval.
func New(interval time.Duration) *Gate { return &Gate{interval: interval} }

// Admit reports whether a line may be written at now; the first call always may.
func (g *Gate) Admit(now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if now.Before(g.next) {
		return false
	}
	every := g.interval
	if every <= 0 {
		every = Interval
	}
	g.next = now.Add(every)
	return true
}
