package delivery

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/cotal-go/cotal/wire"
)

// maxGapRanges bounds the gap ranges a membership keeps; lostCopies.Refused keeps the total.
const maxGapRanges = 256

// lostFlushEvery is how often the membership watch retries writing losses a failed write left
// unrecorded; each loss is written as soon as it is counted.
const lostFlushEvery = time.Second

// lostCopies is what one member lost on one channel (docs/durable.md "Gaps and losses"): the
// copies the trusted reader refused because the member's handoff was full, and the CHAT
// sequences the fan-out never saw that overlap the membership. The registry writes it into the
// membership record under "lost", a cotal addition beside "previous" that readers of the
// membership record (docs/storage.md "Membership records") ignore, so that a mesh restart does
// not make a loss silent.
type lostCopies struct {
	// Refused counts every copy refused for the owner on the channel, @mention copies
	// included, since the record was first written; `cotal deliver pending` shows it.
	Refused int64 `json:"refused,omitempty"`
	// Ranges are the latest maxGapRanges gaps, oldest first: refused copies of a durable
	// channel (exact sequences) and fan-out gaps. listMemberships shows those inside the
	// current membership interval.
	Ranges []wire.SeqRange `json:"ranges,omitempty"`
}

// membershipKey names a member's record on a channel.
type membershipKey struct{ channel, member string }

// refuse counts one refused copy and, for a durable channel's copy, adds its sequence,
// extending the last range when seq follows it.
func (l *lostCopies) refuse(seq uint64, durable bool) {
	l.Refused++
	if !durable {
		return
	}
	if n := len(l.Ranges); n > 0 && l.Ranges[n-1].Last+1 == seq {
		l.Ranges[n-1].Last = seq
		return
	}
	l.add(wire.SeqRange{First: seq, Last: seq})
}

// add appends r, shedding the oldest range past maxGapRanges.
func (l *lostCopies) add(r wire.SeqRange) {
	l.Ranges = append(l.Ranges, r)
	if len(l.Ranges) > maxGapRanges {
		l.Ranges = slices.Delete(l.Ranges, 0, len(l.Ranges)-maxGapRanges)
	}
}

// within returns the ranges that overlap rec's interval (joinCursor, leaveCursor], clipped to it.
func (l *lostCopies) within(rec wire.Membership) []wire.SeqRange {
	var out []wire.SeqRange
	for _, r := range l.Ranges {
		r.First = max(r.First, rec.JoinCursor+1)
		if rec.LeaveCursor != nil {
			r.Last = min(r.Last, *rec.LeaveCursor)
		}
		if r.First <= r.Last {
			out = append(out, r)
		}
	}
	return out
}

// sanitized is a decoded value made safe to keep: inverted ranges dropped, at most
// maxGapRanges of the latest kept.
func (l *lostCopies) sanitized() *lostCopies {
	out := &lostCopies{Refused: max(l.Refused, 0)}
	for _, r := range l.Ranges {
		if r.First <= r.Last {
			out.add(r)
		}
	}
	return out
}

// refused counts a copy of channel refused for member (a full handoff) and marks the record
// for writing. A copy with no membership record (an @mention on a live channel) is counted
// in memory only.
func (v *memberView) refused(channel, member string, seq uint64, durable bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	k := membershipKey{channel, member}
	v.lostLocked(k).refuse(seq, durable)
	v.dirty[k] = true
}

// gap adds a fan-out gap to every record whose interval overlaps it, current or left, and
// marks each for writing. Its subjects are gone with the messages, so it cannot be pinned to
// one channel. It reports whether any record was affected.
func (v *memberView) gap(r wire.SeqRange) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	affected := false
	for channel, owners := range v.byChannel {
		for owner, m := range owners {
			if r.Last <= m.rec.JoinCursor || (m.rec.LeaveCursor != nil && r.First > *m.rec.LeaveCursor) {
				continue
			}
			k := membershipKey{channel, owner}
			v.lostLocked(k).add(r)
			v.dirty[k], affected = true, true
		}
	}
	return affected
}

// lostLocked returns k's losses, creating them. The caller holds mu.
func (v *memberView) lostLocked(k membershipKey) *lostCopies {
	l := v.lost[k]
	if l == nil {
		l = &lostCopies{}
		v.lost[k] = l
	}
	return l
}

// lostSnapshotLocked returns a copy of the losses of channel and owner for a record write, or
// nil when there are none. The caller holds mu.
func (v *memberView) lostSnapshotLocked(channel, owner string) *lostCopies {
	l := v.lost[membershipKey{channel, owner}]
	if l == nil {
		return nil
	}
	return &lostCopies{Refused: l.Refused, Ranges: slices.Clone(l.Ranges)}
}

// gapsOf returns the gaps inside rec's interval.
func (v *memberView) gapsOf(rec wire.Membership) []wire.SeqRange {
	v.mu.Lock()
	defer v.mu.Unlock()
	l := v.lost[membershipKey{rec.Channel, rec.Owner}]
	if l == nil {
		return nil
	}
	return l.within(rec)
}

// refusedBy returns, by channel, how many copies for member were refused; nil when none was.
func (v *memberView) refusedBy(member string) map[string]int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out map[string]int64
	for k, l := range v.lost {
		if k.member == member && l.Refused > 0 {
			if out == nil {
				out = map[string]int64{}
			}
			out[k.channel] = l.Refused
		}
	}
	return out
}

// takeDirty returns the keys whose losses changed since they were last written, and forgets them.
func (v *memberView) takeDirty() []membershipKey {
	v.mu.Lock()
	defer v.mu.Unlock()
	keys := slices.Collect(maps.Keys(v.dirty))
	clear(v.dirty)
	return keys
}

// markDirty marks keys for writing again.
func (v *memberView) markDirty(keys []membershipKey) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, k := range keys {
		v.dirty[k] = true
	}
}

// kickFlush asks the membership watch to write the losses just counted.
func (r *registry) kickFlush() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// flushLost writes the record of every membership whose losses changed, each under its key's
// lock and by compare-and-set like any other write. A key with no record stays in memory; a
// failed write is retried at the next flush.
func (r *registry) flushLost(ctx context.Context) {
	var failed []membershipKey
	for _, k := range r.view.takeDirty() {
		if err := r.writeLost(ctx, k); err != nil {
			failed = append(failed, k)
			r.log.Error("could not record a membership's lost copies; retrying",
				"key", wire.MemberKey(k.channel, k.member), "err", err)
		}
	}
	r.view.markDirty(failed)
}

// writeLost writes k's record with its current losses.
func (r *registry) writeLost(ctx context.Context, k membershipKey) error {
	l := r.keyLock(k.channel, k.member)
	l.Lock()
	defer l.Unlock()
	r.view.mu.Lock()
	m, ok := r.view.lookupLocked(k.channel, k.member)
	r.view.mu.Unlock()
	if !ok {
		return nil
	}
	return r.persistLocked(ctx, m)
}

// DroppedCopies returns, by channel, how many copies for member the trusted reader refused
// because the member's handoff was full of unacknowledged copies; nil when none was. Counts of
// channels the member holds a membership record on are kept in that record and survive a
// restart; the others (@mention copies of live channels) count since Start. Durable channels'
// copies among them are gaps in listMemberships.
func (s *Service) DroppedCopies(member string) map[string]int64 {
	return s.members.view.refusedBy(member)
}
