package endpoint

import "time"

// EventKind names a state change an Endpoint reports through Options.OnEvent.
type EventKind string

// The events an Endpoint reports.
const (
	// EventJoinRefused: the broker refused a channel subscription after the join looked
	// done (SPEC §7: a late refusal is not a join); the channel left the joined set.
	EventJoinRefused EventKind = "join-refused"
	// EventDurableEstablished: a channel's durable backstop became active (SPEC §7).
	EventDurableEstablished EventKind = "durable-established"
	// EventDurableUnavailable: a durable channel is joined live only; Err says why. The
	// Endpoint keeps retrying in the background (SPEC §7: never silently).
	EventDurableUnavailable EventKind = "durable-unavailable"
	// EventConsumerMissing: a bind-only consumer (dm_, svc_, dlv_) does not exist yet; the
	// Endpoint retries binding it (SPEC §8).
	EventConsumerMissing EventKind = "consumer-missing"
	// EventConsumerBound: a bind-only consumer was bound, or bound again after a loss.
	EventConsumerBound EventKind = "consumer-bound"
	// EventDisconnected and EventReconnected track the connection.
	EventDisconnected EventKind = "disconnected"
	EventReconnected  EventKind = "reconnected"
	// EventClosed: the connection is gone for good; Err says why.
	EventClosed EventKind = "closed"
	// EventRejected: a copy failed the receive checks and was terminated, never surfaced
	// (SPEC §4, §5); Subject is where it arrived, Err says why and carries the reason token.
	EventRejected EventKind = "rejected"
)

// Event is one state change. Fields that do not apply to the kind are empty.
type Event struct {
	Kind     EventKind
	Time     time.Time
	Channel  string // join and durable events
	Consumer string // consumer events
	Subject  string // rejected copies
	Err      error
}

// emit reports ev to Options.OnEvent, if set.
func (e *Endpoint) emit(ev Event) {
	if e.opts.OnEvent == nil {
		return
	}
	ev.Time = time.Now()
	e.opts.OnEvent(ev)
}
