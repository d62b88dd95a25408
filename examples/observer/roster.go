package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/wire"
)

// sweepEvery is how often a watch re-reads the roster, so a peer that stopped without a
// final offline record is reported once its heartbeat leaves the liveness window (SPEC §6).
const sweepEvery = time.Second

// observe prints the roster once it is loaded and, with watch, a line per change until ctx
// ends. endpoint.Roster already drops rows that are not a valid presence under their own
// key and shows deleted or stale peers offline.
func observe(ctx context.Context, r *endpoint.Roster, watch bool) error {
	select {
	case <-r.Loaded():
	case <-ctx.Done():
		return ctx.Err()
	}
	peers := r.Snapshot()
	print(peers, time.Now())
	if !watch {
		return nil
	}
	shown := states(peers)
	events, cancel := r.Subscribe()
	defer cancel()
	tick := time.NewTicker(sweepEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-events:
		case <-tick.C:
		}
		now := time.Now()
		for id, state := range states(r.Snapshot()) {
			if shown[id] != state {
				shown[id] = state
				fmt.Printf("%s %s\n", now.Format(time.TimeOnly), state)
			}
		}
	}
}

// states is one line per peer of what the roster shows.
func states(peers []endpoint.Peer) map[string]string {
	out := make(map[string]string, len(peers))
	for _, p := range peers {
		out[p.Presence.Card.ID] = fmt.Sprintf("%s (%s) %s %s", p.Presence.Card.Name, p.Presence.Card.Kind,
			status(p), p.Presence.Activity)
	}
	return out
}

func status(p endpoint.Peer) wire.PresenceStatus {
	if !p.Online {
		return wire.StatusOffline
	}
	return p.Presence.Status
}

// print writes the roster as a table sorted by name.
func print(peers []endpoint.Peer, now time.Time) {
	slices.SortFunc(peers, func(a, b endpoint.Peer) int {
		return cmp.Or(cmp.Compare(a.Presence.Card.Name, b.Presence.Card.Name),
			cmp.Compare(a.Presence.Card.ID, b.Presence.Card.ID))
	})
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tROLE\tSTATUS\tACTIVITY\tLAST SEEN")
	for _, p := range peers {
		c := p.Presence.Card
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s ago\n", c.Name, c.Kind, dash(c.Role), status(p),
			dash(p.Presence.Activity), now.Sub(p.LastSeen).Truncate(time.Second))
	}
	tw.Flush()
	fmt.Printf("%d peers\n", len(peers))
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
