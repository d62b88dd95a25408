package chaos

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Publish is one publish attempt as its publisher journaled it.
type Publish struct {
	// ID is the message id.
	ID string
	// Kind and Target say how it was addressed: KindDM to an instance id, KindAnycast to a
	// role, KindChannel to a channel.
	Kind, Target string
	// Acked is true once JetStream stored it (endpoint.Receipt).
	Acked bool
}

// Surfacing is one message surfaced by one incarnation of one receiver.
type Surfacing struct {
	Receiver, Incarnation, ID string
}

// Audience is who must surface a publish: every one of Receivers or, with One, exactly one of
// them, as an anycast reaches one holder of its role (SPEC §4). May lists receivers that may
// surface it without being owed it, such as a channel's live subscribers that joined too
// late for its durable backstop.
type Audience struct {
	Receivers []string
	One       bool
	May       []string
}

// Figures is the checker's verdict over one run. Lost, Duplicates and Unexpected must be zero;
// the other figures describe what at-least-once delivery allows.
type Figures struct {
	// Acked and Unacked count publishes that JetStream stored, and those whose outcome the
	// publisher never learned (an error, or the publisher was killed).
	Acked, Unacked int
	// Expected counts the deliveries acknowledged publishes owe: one per receiver of the
	// audience, one per anycast.
	Expected int
	// Surfaced counts the owed deliveries that happened.
	Surfaced int
	// Lost counts owed deliveries that never happened (SPEC §4: at-least-once).
	Lost int
	// Duplicates counts extra surfacings of one id by one receiver incarnation: its
	// deduplication by id failed (SPEC §4 "one logical delivery").
	Duplicates int
	// Unexpected counts surfacings of an id never published to that receiver: invented or
	// misrouted content.
	Unexpected int
	// UnackedSurfaced counts unacknowledged publishes that reached their audience anyway.
	UnackedSurfaced int
	// Resurfaced counts ids a receiver surfaced again in a later incarnation, after a crash
	// between surfacing and ack: at-least-once redelivery, which a fresh process cannot
	// deduplicate.
	Resurfaced int
	// ExtraHolders counts anycasts surfaced by more than one holder of the role: an ack lost
	// in a crash redelivers to whichever holder pulls next.
	ExtraHolders int
	// Examples names a few of the lost, duplicated and unexpected deliveries.
	Examples []string
}

// maxExamples bounds Figures.Examples.
const maxExamples = 8

// ErrGuaranteeBroken is returned by Figures.Err when a delivery was lost, duplicated or
// unexpected.
var ErrGuaranteeBroken = errors.New("delivery guarantee broken")

// Err is nil when nothing was lost, duplicated or unexpected, and otherwise says what was.
func (f Figures) Err() error {
	if f.Lost == 0 && f.Duplicates == 0 && f.Unexpected == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d lost, %d surfaced twice, %d unexpected of %d owed; e.g. %s",
		ErrGuaranteeBroken, f.Lost, f.Duplicates, f.Unexpected, f.Expected, strings.Join(f.Examples, "; "))
}

func (f *Figures) example(format string, args ...any) {
	if len(f.Examples) < maxExamples {
		f.Examples = append(f.Examples, fmt.Sprintf(format, args...))
	}
}

// surfaced indexes surfacings by id and receiver.
type surfaced map[string]map[string]map[string]int // id → receiver → incarnation → count

func index(surf []Surfacing) surfaced {
	s := surfaced{}
	for _, x := range surf {
		if s[x.ID] == nil {
			s[x.ID] = map[string]map[string]int{}
		}
		if s[x.ID][x.Receiver] == nil {
			s[x.ID][x.Receiver] = map[string]int{}
		}
		s[x.ID][x.Receiver][x.Incarnation]++
	}
	return s
}

// Check classifies every acknowledged publish, per receiver of its audience, as surfaced or
// lost, and every surfacing as expected, duplicated or unexpected. audience says who must
// surface a publish; it is called for unacknowledged publishes too, since they may surface.
// Several attempts with one id are one publish, acknowledged if any attempt was.
func Check(pubs []Publish, surf []Surfacing, audience func(Publish) Audience) Figures {
	byID := map[string]Publish{}
	for _, p := range pubs {
		q, seen := byID[p.ID]
		if seen {
			p.Acked = p.Acked || q.Acked
		}
		byID[p.ID] = p
	}
	s := index(surf)
	var f Figures
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		f.owe(byID[id], audience(byID[id]), s[id])
	}
	f.classify(s, byID, audience)
	return f
}

// owe checks the deliveries one publish owes.
func (f *Figures) owe(p Publish, aud Audience, got map[string]map[string]int) {
	holders := 0
	for _, r := range aud.Receivers {
		if len(got[r]) > 0 {
			holders++
		}
	}
	if !p.Acked {
		f.Unacked++
		if holders > 0 {
			f.UnackedSurfaced++
		}
		return
	}
	f.Acked++
	if aud.One {
		f.Expected++
		switch {
		case holders == 0:
			f.Lost++
			f.example("%s %s to %s lost", p.Kind, p.ID, p.Target)
		default:
			f.Surfaced++
			if holders > 1 {
				f.ExtraHolders++
			}
		}
		return
	}
	for _, r := range aud.Receivers {
		f.Expected++
		if len(got[r]) > 0 {
			f.Surfaced++
			continue
		}
		f.Lost++
		f.example("%s %s to %s lost at %s", p.Kind, p.ID, p.Target, r)
	}
}

// classify counts duplicated, re-surfaced and unexpected surfacings.
func (f *Figures) classify(s surfaced, byID map[string]Publish, audience func(Publish) Audience) {
	for id, receivers := range s {
		p, published := byID[id]
		var aud Audience
		if published {
			aud = audience(p)
		}
		for r, incarnations := range receivers {
			if !published || (!slices.Contains(aud.Receivers, r) && !slices.Contains(aud.May, r)) {
				f.Unexpected++
				f.example("%s surfaced %s, which was never published to it", r, id)
			}
			if len(incarnations) > 1 {
				f.Resurfaced++
			}
			for inc, n := range incarnations {
				if n > 1 {
					f.Duplicates += n - 1
					f.example("%s (%s) surfaced %s %d times", r, inc, id, n)
				}
			}
		}
	}
}

// FromJournal turns journal entries into the publishes and surfacings Check reads.
func FromJournal(entries []Entry) ([]Publish, []Surfacing) {
	var pubs []Publish
	var surf []Surfacing
	for _, e := range entries {
		switch e.Event {
		case EventAttempt, EventFailed:
			pubs = append(pubs, Publish{ID: e.ID, Kind: e.Kind, Target: e.Target})
		case EventAcked:
			pubs = append(pubs, Publish{ID: e.ID, Kind: e.Kind, Target: e.Target, Acked: true})
		case EventSurfaced:
			surf = append(surf, Surfacing{Receiver: e.Receiver, Incarnation: e.Incarnation, ID: e.ID})
		}
	}
	return pubs, surf
}
