package endpoint

import (
	"sync"
	"sync/atomic"
)

// Stats is a snapshot of an Endpoint's counters since Connect. Counters only grow.
type Stats struct {
	// Surfaced counts deliveries handed to the Handler, by delivery kind (SPEC §4).
	Surfaced map[MetaKind]uint64
	// Historical counts surfaced backfill copies (SPEC §7); they are also in Surfaced.
	Historical uint64
	// Durable counts surfaced copies from the durable backstop (dlv_<id>); also in Surfaced.
	Durable uint64
	// Terminated counts permanent anomalies by SPEC §5 reason token. They were never surfaced
	// and, on JetStream paths, terminated so they are never redelivered.
	Terminated map[string]uint64
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
}

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
	pullsReissued                            atomic.Uint64

	mu         sync.Mutex
	terminated map[string]uint64
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

func (s *stats) terminate(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.terminated == nil {
		s.terminated = make(map[string]uint64)
	}
	s.terminated[reason]++
}

// terminatedTotal is the count of every anomaly terminated so far, whatever its reason, and
// of durable copies outside the read ACL.
func (s *stats) terminatedTotal() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	total := s.outsideACL.Load()
	for _, n := range s.terminated {
		total += n
	}
	return total
}

func (s *stats) snapshot() Stats {
	out := Stats{
		Surfaced: map[MetaKind]uint64{
			MetaChannel: s.surfacedChannel.Load(),
			MetaDM:      s.surfacedDM.Load(),
			MetaAnycast: s.surfacedAnycast.Load(),
		},
		Historical:          s.historical.Load(),
		Durable:             s.durable.Load(),
		Terminated:          make(map[string]uint64),
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
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for r, n := range s.terminated {
		out.Terminated[r] = n
	}
	return out
}

// Stats returns a snapshot of the Endpoint's counters.
func (e *Endpoint) Stats() Stats { return e.stats.snapshot() }
