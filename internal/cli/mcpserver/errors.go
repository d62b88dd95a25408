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
	// ErrUnreachable: the mesh did not answer, or the connection to it is down and being
	// re-established; it may be restarting. The same call may succeed a few seconds later.
	ErrUnreachable = errors.New("the mesh is unreachable")
	// ErrStopped: the agent's Endpoint has stopped (closed, or its connection ended for good);
	// no call succeeds until the server is started again.
	ErrStopped = errors.New("the agent's connection to the mesh has ended")
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
		return fmt.Errorf("%s: %w (%w); it may be restarting: try again in a few seconds",
			action, ErrUnreachable, err)
	}
	return fmt.Errorf("%s: %w", action, err)
}

// online fails unless the Endpoint is connected now. A call made during an outage is answered
// at once instead of after CallTimeout, and cotal_roster does not pass off the last roster it
// saw as the current one.
func (s *Server) online(action string) error {
	select {
	case <-s.e.Done():
		return fmt.Errorf("%s: %w (%v); restart the MCP server once the mesh runs", action, ErrStopped, s.e.Err())
	default:
	}
	if !s.e.Connected() {
		return fmt.Errorf("%s: %w: the connection is down and being re-established; "+
			"the mesh may be restarting: try again in a few seconds", action, ErrUnreachable)
	}
	return nil
}
