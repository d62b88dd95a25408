package endpoint

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// Backlog is what one bound consumer of this instance holds for it (SPEC §8; docs/storage.md
// "Consumers"): the DMs of dm_<id>, the durable channel copies of dlv_<id>, the anycasts of
// svc_<role>, which the role's other holders share.
type Backlog struct {
	// Consumer is the consumer's name; Kind the deliveries it carries (MetaChannel for
	// durable copies).
	Consumer string
	Kind     MetaKind
	// Bound is set while this Endpoint consumes it. A consumer the mesh has not created yet
	// is not bound and owes nothing (Missing).
	Bound   bool
	Missing bool
	// Waiting counts messages stored and not yet handed to any consumer's client; InFlight
	// those handed out and not yet acknowledged, some perhaps pulled ahead by this Endpoint.
	Waiting  uint64
	InFlight int
	// Redelivered counts copies handed out more than once and not yet acknowledged.
	Redelivered int
}

// Backlog reads what each bound consumer of this instance still owes it, in the order dm_,
// dlv_, svc_, from JetStream at the time of the call. A passive Endpoint binds none and gets
// none.
func (e *Endpoint) Backlog(ctx context.Context) ([]Backlog, error) {
	out := make([]Backlog, 0, len(e.binds))
	for _, b := range e.binds {
		bl := Backlog{Consumer: b.consumer, Kind: b.metaKind(), Bound: b.state.bound.Load()}
		cons, err := e.js.Consumer(ctx, b.stream, b.consumer)
		switch {
		case errors.Is(err, jetstream.ErrConsumerNotFound):
			bl.Missing = true
		case err != nil:
			return nil, fmt.Errorf("backlog of %s: %w", b.consumer, err)
		default:
			info := cons.CachedInfo()
			bl.Waiting, bl.InFlight, bl.Redelivered = info.NumPending, info.NumAckPending, info.NumRedelivered
		}
		out = append(out, bl)
	}
	return out, nil
}

// metaKind is how the deliveries of b are addressed.
func (b binding) metaKind() MetaKind {
	switch b.src {
	case srcDM:
		return MetaDM
	case srcAnycast:
		return MetaAnycast
	}
	return MetaChannel
}
