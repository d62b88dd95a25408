package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cotal-go/cotal/internal/termsafe"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

// errUnhealthy: at least one component of the mesh is down.
var errUnhealthy = errors.New("the mesh is unhealthy")

// errIncomplete: a stream, consumer or space of the status could not be read.
var errIncomplete = errors.New("the status is incomplete")

// newStatusCmd is `cotal status`, the one reading command that goes through the admin socket
// instead of endpoint's read API. What it shows is the mesh's own state, which no client
// credential may see: streams and consumers live in the space's storage account (the agent
// account has no JetStream, ARCHITECTURE.md "Two accounts per space"), the admin profile's
// grants stop at its own consumers so it cannot drain or redefine an agent's dm_, dlv_ or
// svc_ consumer, and health, connection counts and the backstop's counters exist only inside
// the process running the mesh. So it has no --link/--creds form; what a client may see
// (channels, who is online) is `cotal channels list` and `cotal who`, on endpoint.
func newStatusCmd() *cobra.Command {
	var spaceName string
	var asJSON, all bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the health, streams, connections and per-member backlog of the running mesh",
		Long: `status asks the mesh running on the data directory, through its admin socket, for:
the health of every component (broker with JetStream, each space's provisioner connection
and delivery loops), the client connections, each space's streams with messages and bytes,
the durable backstop's lag (CHAT messages not yet fanned out, backstop entries not yet
re-authorized), and for every active agent what waits in its consumers: DMs (dm_<id>),
durable copies (dlv_<id>) and its role's anycasts (svc_<role>), each as pending+unacknowledged. It exits 1 when any component is unhealthy, so scripts can check it.

On a cluster node it also shows every node of the JetStream cluster (current, behind, or
offline), the metadata group's leader, and each stream's replicas: the leader and the
followers with their lag. The cluster component is unhealthy when there is no metadata
leader or a stream this node holds has no leader; one node of three down leaves it healthy.
A stream or consumer whose figures cannot be read (no leader answered in time) shows UNREAD,
and status exits 1 naming it after printing everything it could read.

On a mesh with leaf links it says whether it is a hub or a leaf and, per linked space, whether
the link is up (with its round-trip time) or down; a link down leaves the mesh healthy.

status runs beside "cotal up" only: no client credential may read these figures. From
elsewhere, "cotal channels list" and "cotal who" show the channels and who is online.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := localMesh(cmd)
			if err != nil {
				return err
			}
			st, err := c.Status(cmd.Context())
			if err != nil {
				return err
			}
			hideOwnMembers(st, all)
			if asJSON {
				err = json.NewEncoder(cmd.OutOrStdout()).Encode(st)
			} else {
				err = printStatus(cmd.OutOrStdout(), st, spaceName)
			}
			if err != nil {
				return err
			}
			return errors.Join(unhealthy(st), incomplete(st))
		},
	}
	addAdminFlags(cmd, &asJSON)
	cmd.Flags().StringVar(&spaceName, "space", "", "show only this space (default: every space)")
	cmd.Flags().BoolVar(&all, "all", false, allHelp)
	return cmd
}

// unhealthy is errUnhealthy naming every component that is down, or nil.
func unhealthy(st *space.Status) error {
	var down []string
	for _, c := range st.Health {
		if !c.OK {
			down = append(down, c.Name+": "+c.Error)
		}
	}
	if len(down) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s; see the log of `cotal up`", errUnhealthy, strings.Join(down, "; "))
}

// incomplete is errIncomplete naming what could not be read, or nil.
func incomplete(st *space.Status) error {
	unread := st.Errors()
	if len(unread) == 0 {
		return nil
	}
	return fmt.Errorf("%w, what could not be read: %s", errIncomplete, strings.Join(unread, "; "))
}

func printStatus(w io.Writer, st *space.Status, only string) error {
	state := "healthy"
	if unhealthy(st) != nil {
		state = "UNHEALTHY"
	}
	fmt.Fprintf(w, "cotal mesh on %s: %s, %d client connections\n", st.Dir, state, st.Connections)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range st.Health {
		status := "ok"
		if !c.OK {
			status = "DOWN: " + c.Error
		}
		row(tw, "  "+c.Name, status)
	}
	_ = tw.Flush()
	if st.Cluster != nil {
		printClusterStatus(w, st.Cluster)
	}
	if st.Leaf != nil {
		printLeafStatus(w, st.Leaf)
	}
	for _, s := range st.Spaces {
		if only != "" && s.Name != only {
			continue
		}
		printSpaceStatus(w, s)
	}
	return nil
}

// printLeafStatus says which side of its leaf links the mesh is and which links are up.
func printLeafStatus(w io.Writer, l *space.LeafStatus) {
	if l.Role == "hub" {
		fmt.Fprintf(w, "\nleaf hub on %s, %d leaf links up\n", l.Listen, len(l.Links))
	} else {
		fmt.Fprintf(w, "\nleaf of %s\n", l.Hub)
	}
	for _, k := range l.Links {
		if !k.Up {
			fmt.Fprintf(w, "  space %s link: DOWN (local agents keep working; it reconnects by itself)\n", k.Space)
			continue
		}
		fmt.Fprintf(w, "  space %s link: up to %s, rtt %v\n", k.Space, k.Remote, k.RTT)
	}
}

// printClusterStatus lists the nodes of the JetStream metadata group with its leader.
func printClusterStatus(w io.Writer, c *space.ClusterStatus) {
	leader := c.MetaLeader
	if leader == "" {
		leader = "NONE (no majority of the nodes is up and connected)"
	}
	fmt.Fprintf(w, "\ncluster %s, this node %s, meta leader %s\n", c.Name, c.Node, leader)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  NODE\tSTATE\tLAST SEEN")
	for _, n := range c.Nodes {
		seen := "-"
		if n.Active > 0 {
			seen = n.Active.Round(time.Millisecond).String() + " ago"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", n.Name, nodeState(n), seen)
	}
	_ = tw.Flush()
	for _, b := range c.Backstops {
		switch {
		case b.Opening:
			fmt.Fprintf(w, "  space %s backstop: lease not read yet (this node is still opening its bucket)\n", b.Space)
		case b.Error != "":
			fmt.Fprintf(w, "  space %s backstop: lease unreadable (%s)\n", b.Space, termsafe.String(b.Error))
		case b.Node == "":
			fmt.Fprintf(w, "  space %s backstop: NO NODE (its holder died less than %v ago, or none may take it)\n", b.Space, wire.BackstopLeaseTTL)
		default:
			fmt.Fprintf(w, "  space %s backstop: runs on %s\n", b.Space, b.Node)
		}
	}
}

// peerState is "current", "behind N" or "OFFLINE".
func peerState(p space.Peer) string {
	switch {
	case p.Offline:
		return "OFFLINE"
	case p.Current:
		return "current"
	}
	return fmt.Sprintf("behind %d", p.Lag)
}

// nodeState is a node's peerState, or "UNREACHABLE" when it is online to the cluster but this
// node has no route to it.
func nodeState(n space.Peer) string {
	if !n.Offline && !n.Connected {
		return "UNREACHABLE"
	}
	return peerState(n)
}

// replicasText is a stream's "R3 leader node0, node1 current, node2 behind 4", or "-" on a
// mesh that runs alone.
func replicasText(s space.StreamStatus) string {
	if s.Replicas == 0 {
		return "-"
	}
	leader := s.Leader
	if leader == "" {
		leader = "NONE"
	}
	parts := []string{fmt.Sprintf("R%d leader %s", s.Replicas, leader)}
	for _, f := range s.Followers {
		parts = append(parts, f.Name+" "+peerState(f))
	}
	return strings.Join(parts, ", ")
}

func printSpaceStatus(w io.Writer, s space.SpaceStatus) {
	fmt.Fprintf(w, "\nspace %s  %s\n", s.Name, dash(s.Link))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	clustered := len(s.Streams) > 0 && s.Streams[0].Replicas > 0
	if clustered {
		fmt.Fprintln(tw, "  STREAM\tMESSAGES\tBYTES\tCONSUMERS\tLAST SEQ\tREPLICAS")
	} else {
		fmt.Fprintln(tw, "  STREAM\tMESSAGES\tBYTES\tCONSUMERS\tLAST SEQ")
	}
	for _, st := range s.Streams {
		if st.Error != "" {
			fmt.Fprintf(tw, "  %s\tUNREAD\n", st.Name)
			continue
		}
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d", st.Name, st.Messages, st.Bytes, st.Consumers, st.LastSeq)
		if clustered {
			fmt.Fprintf(tw, "\t%s", replicasText(st))
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush()
	b := s.Backstop
	fmt.Fprintf(w, "  backstop: fan-out lag %d, reader lag %d, delivered %d, dropped %d, gaps %d, loop restarts %d\n",
		b.FanoutLag, b.ReaderLag, b.ReaderDelivered, b.ReaderDroppedUnauthorized+b.ReaderDroppedNotEligible+b.ReaderGaveUpUnknown,
		b.GapMessages+b.ReaderDroppedFull, b.Restarts)
	if s.Error != "" {
		fmt.Fprintf(w, "  UNREAD: %s\n", termsafe.String(s.Error))
	}
	if len(s.Members) == 0 {
		fmt.Fprintln(w, "  no active agent credential")
		return
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  MEMBER\tDM\tDURABLE\tANYCAST\tID")
	for _, m := range s.Members {
		row(tw, "  "+m.Name, backlogText(&m.DM), backlogText(&m.Durable), backlogText(m.Anycast), m.ID)
	}
	_ = tw.Flush()
	fmt.Fprintln(w, backlogLegend)
}

// backlogLegend says under the member table what backlogText's figures mean, so the table
// reads without `status --help`.
const backlogLegend = "  each backlog is pending+unacknowledged: not yet delivered to the agent + delivered, not yet acknowledged (\"-\": no role)"

// backlogText is "pending+unacknowledged", "-" without a consumer to ask, "missing" when the
// consumer does not exist, "UNREAD" when it could not be read.
func backlogText(b *space.Backlog) string {
	switch {
	case b == nil:
		return "-"
	case b.Error != "":
		return "UNREAD"
	case b.Missing:
		return "missing"
	}
	return fmt.Sprintf("%d+%d", b.Pending, b.AckPending)
}
