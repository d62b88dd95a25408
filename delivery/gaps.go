package delivery

import (
	"sync"

	"github.com/cotal-go/cotal/wire"
)

// gapLog detects CHAT sequences the fan-out never saw (docs/durable.md "Gaps and losses"). The
// fan-out's filter is the whole stream, so first deliveries arrive with consecutive stream
// sequences; a jump means retention (or an operator) removed messages before the fan-out read
// them. The fan-out records each gap in every membership it overlaps (memberView.gap).
type gapLog struct {
	mu   sync.Mutex
	next uint64 // the stream sequence the next first delivery should carry
}

// resume sets the expected next sequence from the consumer's last delivered one, when the
// fan-out (re)starts.
func (g *gapLog) resume(delivered uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.next = delivered + 1
}

// observe records the first delivery of seq and returns the gap before it, if any.
func (g *gapLog) observe(seq uint64) (wire.SeqRange, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if seq < g.next {
		return wire.SeqRange{}, false
	}
	if seq == g.next {
		g.next++
		return wire.SeqRange{}, false
	}
	gap := wire.SeqRange{First: g.next, Last: seq - 1}
	g.next = seq + 1
	return gap, true
}
