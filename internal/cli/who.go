package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/wire"
)

// whoSweep is how often --watch re-checks liveness: a peer goes offline by silence too.
const whoSweep = time.Second

// whoRow is one instance of the roster as `cotal who` prints it.
type whoRow struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// MintedName is the name the instance's credential was minted with, when the mesh says it
	// differs from the name it calls itself (endpoint.SenderName).
	MintedName string    `json:"mintedName,omitempty"`
	Kind       string    `json:"kind"`
	Role       string    `json:"role,omitempty"`
	Status     string    `json:"status"`
	Activity   string    `json:"activity,omitempty"`
	Attention  string    `json:"attention,omitempty"`
	LastSeen   time.Time `json:"lastSeen"`
}

func newWhoCmd() *cobra.Command {
	var f clientFlags
	var watch, all bool
	cmd := &cobra.Command{
		Use:   "who",
		Short: "List the instances in the space: name, kind, role, status, activity, last seen",
		Long: `who prints the presence roster of the space (SPEC §6): every instance with a presence
entry, online ones first. An instance is offline when it said so or when its last heartbeat
is older than the liveness window (6 s). With --watch the list is printed again on every
change until Ctrl-C; with --json it is a JSON array (one per line with --watch).

who only reads: it announces no presence of its own.` + connectHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWho(cmd, &f, watch, all)
		},
	}
	addClientFlags(cmd, &f)
	cmd.Flags().BoolVar(&watch, "watch", false, "print the roster again on every change, until Ctrl-C")
	cmd.Flags().BoolVar(&all, "all", false, allHelp)
	return cmd
}

func runWho(cmd *cobra.Command, f *clientFlags, watch, all bool) error {
	want := mintFor{command: "who", profile: wire.ProfileAdmin, lifetime: oneShotLifetime}
	if watch {
		want.lifetime = streamingLifetime
	}
	return withReader(cmd, f, want, func(_ *session, e *endpoint.Endpoint) error { return showWho(cmd, f, e, watch, all) })
}

// showWho prints the roster once it holds every presence row (SPEC §6), and with watch again
// whenever what it shows changes, until the command's context ends.
func showWho(cmd *cobra.Command, f *clientFlags, e *endpoint.Endpoint, watch, all bool) error {
	ctx := cmd.Context()
	roster := e.Roster()
	changes, stop := roster.Subscribe()
	defer stop()
	loadCtx, cancel := context.WithTimeout(ctx, readWait)
	defer cancel()
	select {
	case <-roster.Loaded():
	case <-loadCtx.Done():
		return fmt.Errorf("read presence: %w", loadCtx.Err())
	}
	out := cmd.OutOrStdout()
	last := renderWho(mintedRows(ctx, e, visiblePeers(roster.Snapshot(), all)), f.asJSON, out, watch)
	if !watch {
		return nil
	}
	tick := time.NewTicker(whoSweep)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-e.Done():
			return fmt.Errorf("the presence watch ended (%v); run who again", e.Err())
		case <-changes:
		case <-tick.C:
		}
		peers := visiblePeers(roster.Snapshot(), all)
		if rows := mintedRows(ctx, e, peers); rosterKey(rows) != last {
			last = renderWho(rows, f.asJSON, out, true)
		}
	}
}

// whoRows sorts the roster as the presence bucket holds it, removed keys left out: online
// first, then by name and id.
func whoRows(peers []endpoint.Peer) []whoRow {
	now := time.Now()
	out := make([]whoRow, 0, len(peers))
	for _, peer := range peers {
		if peer.Removed {
			continue
		}
		p := peer.Presence
		out = append(out, whoRow{ID: p.Card.ID, Name: p.Card.Name, Kind: string(p.Card.Kind), Role: p.Card.Role,
			Status: string(p.EffectiveStatus(now, wire.DefaultLivenessWindow)), Activity: p.Activity,
			Attention: string(p.Attention), LastSeen: time.UnixMilli(p.TS)})
	}
	sort.Slice(out, func(i, j int) bool {
		oi, oj := out[i].Status != string(wire.StatusOffline), out[j].Status != string(wire.StatusOffline)
		if oi != oj {
			return oi
		}
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// mintedRows are the rows of peers, each with the minted name of an instance that calls
// itself something else. Each lookup is bounded as a printed line's is (senderNames).
func mintedRows(ctx context.Context, e *endpoint.Endpoint, peers []endpoint.Peer) []whoRow {
	rows := whoRows(peers)
	for i, r := range rows {
		ctx, cancel := context.WithTimeout(ctx, senderLookupWait)
		rec, found, err := e.MintedName(ctx, r.ID)
		cancel()
		if err == nil && found && !strings.EqualFold(rec.Name, r.Name) {
			rows[i].MintedName = rec.Name
		}
	}
	return rows
}

// rosterKey is what the printed roster shows, minus the ever-moving last-seen times.
func rosterKey(rows []whoRow) string {
	var b strings.Builder
	for _, r := range rows {
		r.LastSeen = time.Time{}
		fmt.Fprintf(&b, "%+v\n", r)
	}
	return b.String()
}

// renderWho prints the roster and returns its rosterKey. The JSON form holds the peers'
// strings exactly, for programs; the table escapes them (row), since every peer chooses its
// own name, role and activity.
func renderWho(list []whoRow, asJSON bool, out io.Writer, watch bool) string {
	if asJSON {
		data, _ := json.Marshal(list)
		fmt.Fprintf(out, "%s\n", data)
		return rosterKey(list)
	}
	color := colorOn(out, false)
	if watch {
		if color {
			fmt.Fprint(out, "\x1b[H\x1b[2J")
		}
		fmt.Fprintf(out, "%s\n", style(color, ansiDim, time.Now().Format("15:04:05")))
	}
	if len(list) == 0 {
		fmt.Fprintln(out, "no instance has a presence entry in this space")
		return rosterKey(list)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tROLE\tSTATUS\tACTIVITY\tLAST SEEN\tID")
	for _, r := range list {
		name := r.Name
		if r.MintedName != "" {
			name = endpoint.ShowName(r.MintedName, r.Name)
		}
		row(tw, name, r.Kind, dash(r.Role), r.Status, dash(r.Activity), ago(r.LastSeen), r.ID)
	}
	_ = tw.Flush()
	return rosterKey(list)
}

// dash stands in for an empty table cell.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
