package endpoint

import (
	"github.com/nats-io/nats.go"

	"github.com/cotal-go/cotal/wire"
)

// InjectAsyncError hands err to the Endpoint as if the broker had reported it asynchronously,
// so tests can drive the late-refusal path (SPEC §7) without changing a live credential.
func InjectAsyncError(e *Endpoint, err error) { e.onAsyncError(e.nc, nil, err) }

// CarriesRoster reports whether the shared presence watch of e's directory runs on e's
// connection, so a test can close the carrier and see the watch move.
func CarriesRoster(e *Endpoint) bool {
	d := e.roster.dir
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.carrier == e
}

// UncheckedDuplicates is how many duplicates e dropped without decoding them, because they
// were byte for byte a channel copy it had surfaced (duplicateCopy).
func UncheckedDuplicates(e *Endpoint) uint64 { return e.stats.uncheckedDuplicates.Load() }

// Conn is e's NATS connection, for tests that crash it or count its subscriptions.
func Conn(e *Endpoint) *nats.Conn { return e.nc }

// Ref is the EndpointRef e signs its messages with, for tests that forge or hand-build them.
func Ref(e *Endpoint) wire.EndpointRef { return e.ref() }
