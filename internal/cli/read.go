package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/wire"
)

// readWait bounds the connect and each read a read command makes. A cluster that lost a
// node answers nothing until its streams elect new leaders, which can take 10 s, so it is
// longer than that; waitFor says what the command waits for after 2 s.
const readWait = 20 * time.Second

// readerReconnects bounds the reconnects of a read command's connection: it gives up after
// about ten seconds without a mesh instead of waiting out an agent's budget.
const readerReconnects = 5

// withReader opens the session want describes (minting a short-lived credential beside
// `cotal up`), connects a passive Endpoint with it, runs fn, and closes both. A passive
// Endpoint announces no presence and binds no consumer, so it takes nothing from anyone: it
// works with every profile's grants (agent within its allowSubscribe, observer, admin; SPEC
// Appendix B).
func withReader(cmd *cobra.Command, f *clientFlags, want mintFor, fn func(*session, *endpoint.Endpoint) error) error {
	s, err := openSession(cmd, f, want)
	if err != nil {
		return err
	}
	defer s.close(want)
	e, err := s.connect(cmd.Context(), endpoint.Options{Passive: true})
	if err != nil {
		return err
	}
	defer closeEndpoint(e)
	return fn(s, e)
}

// connect connects an Endpoint with the session's link and credential; opts adds the rest.
// A passive Endpoint joins none of the link's channels: it only reads.
func (s *session) connect(ctx context.Context, opts endpoint.Options) (*endpoint.Endpoint, error) {
	opts.Link, opts.Creds, opts.Kind = s.raw, s.creds, wire.CardKindEndpoint
	if opts.Passive {
		l := s.link
		l.Channels = nil
		opts.Link, opts.MaxReconnects = l.String(), readerReconnects
	}
	ctx, cancel := context.WithTimeout(ctx, readWait)
	defer cancel()
	defer s.waitFor("connect and read the space", readWait)()
	e, err := endpoint.Connect(ctx, opts)
	if err != nil {
		return nil, s.connectError(err)
	}
	return e, nil
}

// closeEndpoint closes e, bounded so that a lost mesh does not hold the command.
func closeEndpoint(e *endpoint.Endpoint) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = e.Close(ctx)
}

// aclError turns a refused read or join into what to do about it; what names the refused
// channels, "" for unnamed ones.
func aclError(err error, what string, s *session) error {
	if !errors.Is(err, endpoint.ErrReadRefused) && !errors.Is(err, endpoint.ErrJoinRefused) {
		return err
	}
	if what == "" {
		what = "a channel"
	}
	return fmt.Errorf("the mesh refused to let %q read %s (%w); name channels inside its allowSubscribe, or mint a credential that covers them (`cotal auth mint --allow-subscribe CHANNEL`)",
		s.cred.Name, what, err)
}

// lastOf merges per-channel histories by stream sequence and keeps the last limit.
func lastOf(lists [][]endpoint.Delivery, limit int) []endpoint.Delivery {
	var all []endpoint.Delivery
	for _, l := range lists {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Meta.Seq < all[j].Meta.Seq })
	if len(all) > limit {
		all = all[len(all)-limit:]
	}
	return all
}
