package delivery

import (
	"sync"

	"github.com/cotal-go/cotal/wire"
)

// maxGapRanges bounds the gap ranges kept for listMemberships; the counters keep the totals.
const maxGapRanges = 256

// gapLog detects CHAT sequences the fan-out never saw (LAYOUT.md trap "Eviction before
// fan-out"). The fan-out's filter is the whole stream, so first deliveries arrive with
// consecutive stream sequences; a jump means retention (or an operator) removed messages
// before the fan-out read them. Their subjects are gone with them, so a gap cannot be pinned
// to a channel: it is reported to every membership whose interval overlaps it.
type gapLog struct {
	mu     sync.Mutex
	next   uint64 // the stream sequence the next first delivery should carry
	ranges []wire.SeqRange
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
	g.ranges = append(g.ranges, gap)
	if len(g.ranges) > maxGapRanges {
		g.ranges = g.ranges[len(g.ranges)-maxGapRanges:]
	}
	return gap, true
}

// affecting returns the recorded gaps that overlap rec's membership interval.
func (g *gapLog) affecting(rec wire.Membership) []wire.SeqRange {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []wire.SeqRange
	for _, r := range g.ranges {
		if r.Last > rec.JoinCursor && (rec.LeaveCursor == nil || r.First <= *rec.LeaveCursor) {
			out = append(out, r)
		}
	}
	return out
}

// droppedLog records, per membership, the CHAT sequences of the copies the reader refused
// because the member's handoff was full (issue 12 item 9). Each sequence is exact, so the
// sizes of a membership's ranges add up to the copies it lost, until maxGapRanges older
// ranges are shed.
type droppedLog struct {
	mu     sync.Mutex
	ranges map[membershipKey][]wire.SeqRange
	counts map[membershipKey]int64 // every refused copy, @mention copies included
}

// membershipKey names a member's memberships of a channel; a membership's interval picks its own.
type membershipKey struct{ channel, member string }

// record counts a refused copy of channel for member and, when it was a durable channel's
// copy, adds seq to the gaps of member's membership, extending the last range when seq
// follows it.
func (d *droppedLog) record(channel, member string, seq uint64, durable bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ranges == nil {
		d.ranges, d.counts = map[membershipKey][]wire.SeqRange{}, map[membershipKey]int64{}
	}
	k := membershipKey{channel, member}
	d.counts[k]++
	if !durable {
		return
	}
	rs := d.ranges[k]
	if n := len(rs); n > 0 && rs[n-1].Last+1 == seq {
		rs[n-1].Last = seq
		return
	}
	rs = append(rs, wire.SeqRange{First: seq, Last: seq})
	if len(rs) > maxGapRanges {
		rs = rs[len(rs)-maxGapRanges:]
	}
	d.ranges[k] = rs
}

// of returns the refused copies inside rec's membership interval.
func (d *droppedLog) of(rec wire.Membership) []wire.SeqRange {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []wire.SeqRange
	for _, r := range d.ranges[membershipKey{rec.Channel, rec.Owner}] {
		if r.First > rec.JoinCursor && (rec.LeaveCursor == nil || r.Last <= *rec.LeaveCursor) {
			out = append(out, r)
		}
	}
	return out
}

// byChannel returns how many copies of each channel were refused for member.
func (d *droppedLog) byChannel(member string) map[string]int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out map[string]int64
	for k, n := range d.counts {
		if k.member == member {
			if out == nil {
				out = map[string]int64{}
			}
			out[k.channel] = n
		}
	}
	return out
}

// DroppedCopies returns, by channel, how many copies for member the trusted reader refused
// since Start because the member's handoff was full of unacknowledged copies (issue 12 item
// 9); nil when none was. Durable channels' copies among them are gaps in listMemberships.
func (s *Service) DroppedCopies(member string) map[string]int64 { return s.dropped.byChannel(member) }
