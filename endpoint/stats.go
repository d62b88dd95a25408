package endpoint

import (
	"sync/atomic"

	"github.com/cotal-go/cotal/wire"
)

// Stats is a snapshot of an Endpoint's counters since Connect. Counters only grow. Taking one
// allocates nothing, so it may be polled at any rate.
type Stats struct {
	// Surfaced counts deliveries handed to the Handler, by delivery kind (SPEC §4).
	Surfaced KindCounts
	// Historical counts surfaced backfill copies (SPEC §7); they are also in Surfaced.
	Historical uint64
	// Durable counts surfaced copies from the durable backstop (dlv_<id>); also in Surfaced.
	Durable uint64
	// Terminated counts permanent anomalies by SPEC §5 reason token. They were never surfaced
	// and, on JetStream paths, terminated so they are never redelivered.
	Terminated ReasonCounts
	// Duplicates counts copies dropped because their id was already surfaced (SPEC §4, §7).
	Duplicates uint64
	// OutsideACL counts durable copies terminated unsurfaced because the credential's current
	// read ACL no longer covers their channel (SPEC §9 item 6, §12 item 14).
	OutsideACL uint64
	// OwnEchoes counts own channel messages not surfaced because Options.EchoOwn is off.
	OwnEchoes uint64
	// Redeliveries counts JetStream copies that arrived with a delivery count above one.
	Redeliveries uint64
	// Naks counts JetStream copies negatively acknowledged for a later redelivery.
	Naks uint64
	// HandlerErrors counts Handler calls that returned an error.
	HandlerErrors uint64
	// Unhandled counts copies that arrived while no Handler was set; JetStream copies among
	// them were nak'd, live copies were lost (they are at-most-once, SPEC §4).
	Unhandled uint64
	// Published counts messages stored by JetStream through this Endpoint.
	Published uint64
	// PresenceDropped counts presence rows dropped as invalid or keyed under another id
	// (SPEC §6; docs/hostile-agents.md "Reply subjects are the requester's").
	PresenceDropped uint64
	// RosterEventsDropped counts roster events a slow subscriber missed.
	RosterEventsDropped uint64
	// WatchRebuilds counts presence watches rebuilt after they stalled or died.
	WatchRebuilds uint64
	// PullsReissued counts pull requests sent again on a bound consumer because none was
	// known to be open: after its heartbeats stopped (a request or its status answer lost on
	// the way) or after a reconnect (docs/durable.md "Pulls that go missing").
	PullsReissued uint64
	// TasksHandedBack counts tasks given back with a nak, unhandled, to the role's other
	// holders because they waited behind a task the Handler held too long (docs/durable.md
	// "Pulling tasks").
	TasksHandedBack uint64
}

// KindCounts are counters by delivery kind (SPEC §4).
type KindCounts struct {
	Channel, DM, Anycast uint64
}

// Of is the counter of kind k; zero for a kind that is none of the three.
func (c KindCounts) Of(k MetaKind) uint64 {
	switch k {
	case MetaChannel:
		return c.Channel
	case MetaDM:
		return c.DM
	case MetaAnycast:
		return c.Anycast
	}
	return 0
}

// ReasonCounts are counters by SPEC §5 rejection reason token.
type ReasonCounts struct {
	MalformedSubject, SenderMismatch, MalformedJSON uint64
}

// Of is the counter of reason, a wire.Reason* token; zero for any other string.
func (c ReasonCounts) Of(reason string) uint64 {
	switch reason {
	case wire.ReasonMalformedSubject:
		return c.MalformedSubject
	case wire.ReasonSenderMismatch:
		return c.SenderMismatch
	case wire.ReasonMalformedJSON:
		return c.MalformedJSON
	}
	return 0
}

// Total is the sum of the counters.
func (c ReasonCounts) Total() uint64 { return c.MalformedSubject + c.SenderMismatch + c.MalformedJSON }

// stats holds the live counters behind Stats.
type stats struct {
	surfacedChannel, surfacedDM, surfacedAnycast atomic.Uint64
	historical, durable                          atomic.Uint64
	duplicates, ownEchoes, outsideACL            atomic.Uint64
	// uncheckedDuplicates counts the duplicates dropped undecoded (duplicateCopy); they are
	// also in duplicates.
	uncheckedDuplicates                      atomic.Uint64
	redeliveries, naks                       atomic.Uint64
	handlerErrors, unhandled, published      atomic.Uint64
	presenceDropped, rosterDropped, rebuilds atomic.Uint64
	pullsReissued, tasksHandedBack           atomic.Uint64
	// malformedSubject, senderMismatch and malformedJSON count terminations by reason.
	malformedSubject, senderMismatch, malformedJSON atomic.Uint64
}

func (s *stats) surfaced(m Meta) {
	switch m.Kind {
	case MetaChannel:
		s.surfacedChannel.Add(1)
	case MetaDM:
		s.surfacedDM.Add(1)
	case MetaAnycast:
		s.surfacedAnycast.Add(1)
	}
	if m.Historical {
		s.historical.Add(1)
	}
	if m.Durable {
		s.durable.Add(1)
	}
}

// terminate counts a termination for reason; a reason that is no SPEC §5 token counts as
// malformed-json, as reject reports it.
func (s *stats) terminate(reason string) {
	switch reason {
	case wire.ReasonMalformedSubject:
		s.malformedSubject.Add(1)
	case wire.ReasonSenderMismatch:
		s.senderMismatch.Add(1)
	default:
		s.malformedJSON.Add(1)
	}
}

// terminatedTotal is the count of every anomaly terminated so far, whatever its reason, and
// of durable copies outside the read ACL.
func (s *stats) terminatedTotal() uint64 {
	return s.malformedSubject.Load() + s.senderMismatch.Load() + s.malformedJSON.Load() + s.outsideACL.Load()
}

func (s *stats) snapshot() Stats {
	return Stats{
		Surfaced: KindCounts{Channel: s.surfacedChannel.Load(), DM: s.surfacedDM.Load(),
			Anycast: s.surfacedAnycast.Load()},
		Historical: s.historical.Load(),
		Durable:    s.durable.Load(),
		Terminated: ReasonCounts{MalformedSubject: s.malformedSubject.Load(),
			SenderMismatch: s.senderMismatch.Load(), MalformedJSON: s.malformedJSON.Load()},
		Duplicates:          s.duplicates.Load(),
		OwnEchoes:           s.ownEchoes.Load(),
		OutsideACL:          s.outsideACL.Load(),
		Redeliveries:        s.redeliveries.Load(),
		Naks:                s.naks.Load(),
		HandlerErrors:       s.handlerErrors.Load(),
		Unhandled:           s.unhandled.Load(),
		Published:           s.published.Load(),
		PresenceDropped:     s.presenceDropped.Load(),
		RosterEventsDropped: s.rosterDropped.Load(),
		WatchRebuilds:       s.rebuilds.Load(),
		PullsReissued:       s.pullsReissued.Load(),
		TasksHandedBack:     s.tasksHandedBack.Load(),
	}
}

// Stats returns a snapshot of the Endpoint's counters.
func (e *Endpoint) Stats() Stats { return e.stats.snapshot() }
