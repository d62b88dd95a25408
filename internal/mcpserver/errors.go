package mcpserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/endpoint"
)

// Tool errors. Each reaches the client as a tool result with isError set and a sentence that
// says what to do; none ends the server.
var (
	// ErrUnknownName: no peer in the roster has the name a DM was addressed to.
	ErrUnknownName = errors.New("unknown name")
	// ErrAmbiguousName: more than one peer has the name a DM was addressed to.
	ErrAmbiguousName = errors.New("ambiguous name")
	// ErrNoChannel: cotal_send was called without a channel and the agent has no default.
	ErrNoChannel = errors.New("no channel to post on")
	// ErrUnknownChannel: cotal_channel_info asked about a channel the space does not know.
	ErrUnknownChannel = errors.New("unknown channel")
	// ErrInvalidArgument: an argument has a value no call can take.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrUnreachable: the mesh did not answer; it may be restarting.
	ErrUnreachable = errors.New("the mesh did not answer")
)

// unreachable reports whether err means the mesh could not be reached, as opposed to refused
// or rejected the call.
func unreachable(err error) bool {
	for _, target := range []error{context.DeadlineExceeded, nats.ErrTimeout, nats.ErrConnectionClosed,
		nats.ErrConnectionReconnecting, nats.ErrNoServers, nats.ErrDisconnected, nats.ErrNoResponders,
		jetstream.ErrNoStreamResponse, endpoint.ErrClosed} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// meshError says what a failed call against the mesh means: unreachable (try again), or the
// endpoint's own error, prefixed with what was being done.
func meshError(action string, err error) error {
	if unreachable(err) {
		return fmt.Errorf("%s: %w (%w); it may be restarting or unreachable: try again in a few seconds",
			action, ErrUnreachable, err)
	}
	return fmt.Errorf("%s: %w", action, err)
}
