package delivery

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"github.com/cotal-go/cotal/wire"
)

// maxPastIntervals bounds the closed intervals a member record keeps for the fan-out.
const maxPastIntervals = 32

// pastInterval is a closed membership interval (JoinCursor, LeaveCursor] of an earlier
// generation, kept while the fan-out may still have to route messages inside it (doc.go,
// "Rejoin"). A cotal addition to the membership record (docs/storage.md "Membership records"),
// stored under "previous".
type pastInterval struct {
	Generation  uint64 `json:"generation"`
	JoinCursor  uint64 `json:"joinCursor"`
	LeaveCursor uint64 `json:"leaveCursor"`
}

func (p pastInterval) eligible(seq uint64) bool { return p.JoinCursor < seq && seq <= p.LeaveCursor }

// member is one member's state on one channel: its current record and the closed intervals
// of earlier generations the fan-out has not yet passed.
type member struct {
	rec  wire.Membership
	past []pastInterval
	// joining is set while the join that wrote rec is not yet persisted and may still be
	// rolled back (registry.join): no copy is handed over under its generation until then.
	joining bool
}

// storedMember is the persisted form: the wire.Membership record plus the closed intervals and
// the losses (lost.go). Readers of the record ignore the extra fields (SPEC §11).
type storedMember struct {
	wire.Membership
	Previous []pastInterval `json:"previous,omitempty"`
	Lost     *lostCopies    `json:"lost,omitempty"`
}

// decodeMember decodes a stored record strictly (wire.DecodeMembership) with its past
// intervals and its losses, nil when it has none.
func decodeMember(key string, data []byte) (member, *lostCopies, error) {
	rec, err := wire.DecodeMembership(key, data)
	if err != nil {
		return member{}, nil, err
	}
	var s struct {
		Previous []pastInterval `json:"previous"`
		Lost     *lostCopies    `json:"lost"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return member{}, nil, fmt.Errorf("%w: previous or lost: %w", wire.ErrInvalidRecord, err)
	}
	if s.Lost != nil {
		s.Lost = s.Lost.sanitized()
	}
	return member{rec: *rec, past: s.Previous}, s.Lost, nil
}

// memberView is the in-memory membership registry (SPEC §7): every record of cotal_members_<s>,
// by channel and owner. The delivery service is the registry's only writer, so the view is
// exact without reading the bucket again after start (docs/durable.md "Views kept in memory").
//
// mu is the join fence: fan-out holds it while it decides which members a message goes to,
// and a join or leave holds it while it reads the CHAT cursor and updates the record (doc.go).
// It also guards each member's losses (lost.go), kept beside the records so that a join, a
// leave or a failed write never replaces them.
type memberView struct {
	mu        sync.Mutex
	byChannel map[string]map[string]member // channel -> owner -> state
	lost      map[membershipKey]*lostCopies
	dirty     map[membershipKey]bool // losses changed since the record was last written
}

func newMemberView() *memberView {
	return &memberView{byChannel: map[string]map[string]member{}, lost: map[membershipKey]*lostCopies{},
		dirty: map[membershipKey]bool{}}
}

// recipient is a member a copy is routed to, with the generation it is tagged with; joining
// marks a generation whose join is not yet persisted.
type recipient struct {
	id         string
	generation uint64
	joining    bool
}

// eligibleLocked appends to dst every member of channel, except the sender, with a membership
// interval, current or past, that holds seq (SPEC §7). The caller holds mu.
func (v *memberView) eligibleLocked(dst []recipient, channel, sender string, seq uint64) []recipient {
	for owner, m := range v.byChannel[channel] {
		if owner == sender {
			continue
		}
		if m.rec.Eligible(seq) {
			dst = append(dst, recipient{id: owner, generation: m.rec.Generation, joining: m.joining})
			continue
		}
		for _, p := range m.past {
			if p.eligible(seq) {
				dst = append(dst, recipient{id: owner, generation: p.Generation})
				break
			}
		}
	}
	return dst
}

// lookupLocked returns owner's state on channel. The caller holds mu.
func (v *memberView) lookupLocked(channel, owner string) (member, bool) {
	m, ok := v.byChannel[channel][owner]
	return m, ok
}

// putLocked stores m. The caller holds mu.
func (v *memberView) putLocked(m member) {
	owners := v.byChannel[m.rec.Channel]
	if owners == nil {
		owners = map[string]member{}
		v.byChannel[m.rec.Channel] = owners
	}
	owners[m.rec.Owner] = m
}

// removeLocked drops owner's state on channel. The caller holds mu.
func (v *memberView) removeLocked(channel, owner string) {
	delete(v.byChannel[channel], owner)
	if len(v.byChannel[channel]) == 0 {
		delete(v.byChannel, channel)
	}
}

// authorizes re-checks a durable-channel backstop entry against the member's record (SPEC §7,
// §8, §9 item 5). An entry of the record's generation must lie in its interval, so leave is a
// hard read boundary. An entry of an earlier generation was written by the fan-out only inside
// that generation's closed interval (doc.go), so, like any pre-leave entry, it stays
// deliverable. No record, or an entry tagged with a generation the record never reached (a
// join that was rolled back), is not authorized.
func (v *memberView) authorizes(channel, owner string, generation, seq uint64) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	m, ok := v.lookupLocked(channel, owner)
	switch {
	case !ok || generation > m.rec.Generation:
		return false
	case generation < m.rec.Generation:
		return true
	}
	return m.rec.Eligible(seq)
}

// joining reports whether owner's record on channel is of generation and its join is not yet
// persisted.
func (v *memberView) joining(channel, owner string, generation uint64) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	m, ok := v.lookupLocked(channel, owner)
	return ok && m.joining && m.rec.Generation == generation
}

// active returns owner's memberships that have not been left, by channel.
func (v *memberView) active(owner string) []wire.Membership {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []wire.Membership
	for _, owners := range v.byChannel {
		if m, ok := owners[owner]; ok && m.rec.LeaveCursor == nil {
			out = append(out, m.rec)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Channel < out[j].Channel })
	return out
}
