package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/endpoint"
)

// sweepEvery is how often a watch re-checks heartbeats, so a peer that stopped without a
// final offline record is reported once its row leaves the liveness window (SPEC §6).
const sweepEvery = time.Second

// roster is the presence bucket as last read: key → valid row.
type roster map[string]endpoint.Presence

// observe reads every presence row of space, prints the roster, and with watch keeps printing
// changes until ctx ends.
func observe(ctx context.Context, nc *nats.Conn, space string, watch bool) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	kv, err := js.KeyValue(ctx, endpoint.NewNames(space).PresenceBucket())
	if err != nil {
		return fmt.Errorf("open the presence bucket of %s: %w", space, err)
	}
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("watch presence: %w", err)
	}
	defer w.Stop()

	rows := roster{}
	for e := range w.Updates() {
		if e == nil { // every current row has been delivered
			rows.print(time.Now())
			if !watch {
				return nil
			}
			return follow(ctx, w, rows)
		}
		rows.apply(e)
	}
	return fmt.Errorf("the presence watch ended before the roster was read")
}

// follow prints a line whenever what the roster shows of a peer changes.
func follow(ctx context.Context, w jetstream.KeyWatcher, rows roster) error {
	shown := rows.states(time.Now())
	tick := time.NewTicker(sweepEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return fmt.Errorf("the presence watch ended")
			}
			rows.apply(e)
		case <-tick.C:
		}
		now := time.Now()
		for key, state := range rows.states(now) {
			if shown[key] != state {
				shown[key] = state
				fmt.Printf("%s %s\n", now.Format(time.TimeOnly), state)
			}
		}
	}
}

// apply folds one watch entry in. A deleted or purged key shows its last row as offline
// (SPEC §6), as endpoint.Roster does; a row that is not a valid presence record under its own
// key is skipped (LAYOUT.md "Reply-subject injection").
func (r roster) apply(e jetstream.KeyValueEntry) {
	if op := e.Operation(); op == jetstream.KeyValueDelete || op == jetstream.KeyValuePurge {
		if p, ok := r[e.Key()]; ok {
			p.Status = endpoint.StatusOffline
			r[e.Key()] = p
		}
		return
	}
	p, err := endpoint.DecodePresence(e.Key(), e.Value())
	if err != nil {
		fmt.Fprintf(os.Stderr, "skipped the presence row %s: %v\n", e.Key(), err)
		return
	}
	r[e.Key()] = *p
}

// states is one line per peer of what the roster shows, stale rows counted offline.
func (r roster) states(now time.Time) map[string]string {
	out := make(map[string]string, len(r))
	for key, p := range r {
		out[key] = fmt.Sprintf("%s (%s) %s %s", p.Card.Name, p.Card.Kind,
			p.EffectiveStatus(now, endpoint.DefaultLivenessWindow), p.Activity)
	}
	return out
}

// print writes the roster as a table sorted by name, then id.
func (r roster) print(now time.Time) {
	peers := make([]endpoint.Presence, 0, len(r))
	for _, p := range r {
		peers = append(peers, p)
	}
	sort.Slice(peers, func(i, j int) bool {
		if peers[i].Card.Name != peers[j].Card.Name {
			return peers[i].Card.Name < peers[j].Card.Name
		}
		return peers[i].Card.ID < peers[j].Card.ID
	})
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tROLE\tSTATUS\tACTIVITY\tLAST SEEN")
	for _, p := range peers {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s ago\n", p.Card.Name, p.Card.Kind, dash(p.Card.Role),
			p.EffectiveStatus(now, endpoint.DefaultLivenessWindow), dash(p.Activity),
			now.Sub(time.UnixMilli(p.TS)).Truncate(time.Second))
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
