package space

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
)

// placementReport describes what this node sees of the JetStream cluster, for an error of a
// stream request that went unanswered: a clustered create waits for the stream's RAFT group
// to elect a leader, and times out without saying which part is missing. It names the
// metadata leader and peers, then each stream this node holds a replica of with its leader
// (or none) and its peers. Empty on a mesh that runs alone.
func (m *Mesh) placementReport() string {
	if !m.opts.clustered() || m.broker == nil {
		return ""
	}
	ns := m.broker.Server()
	jsi, err := ns.Jsz(&server.JSzOptions{Accounts: true, Streams: true, RaftGroups: true})
	if err != nil {
		return fmt.Sprintf("cluster state as node %s sees it: unreadable: %v", ns.Name(), err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "cluster state as node %s sees it:", ns.Name())
	if jsi.Meta == nil {
		b.WriteString(" no JetStream metadata group")
		return b.String()
	}
	fmt.Fprintf(&b, " meta leader %q, peers %s, pending %d;", jsi.Meta.Leader, peerList(jsi.Meta.Replicas), jsi.Meta.Pending)
	var lines []string
	for _, acc := range jsi.AccountDetails {
		for _, s := range acc.Streams {
			if s.Cluster == nil {
				continue
			}
			lines = append(lines, fmt.Sprintf(" %s (group %s) leader %q peers %s", s.Name, s.RaftGroup, s.Cluster.Leader, peerList(s.Cluster.Replicas)))
		}
	}
	slices.Sort(lines)
	fmt.Fprintf(&b, " %d streams held here:%s", len(lines), strings.Join(lines, ";"))
	return b.String()
}

// peerList writes peers as name(state), the state one of current, behind N, offline.
func peerList(peers []*server.PeerInfo) string {
	parts := make([]string, 0, len(peers))
	for _, p := range peers {
		state := "current"
		switch {
		case p.Offline:
			state = "offline"
		case !p.Current:
			state = fmt.Sprintf("behind %d, seen %v ago", p.Lag, p.Active.Round(1e6))
		}
		parts = append(parts, fmt.Sprintf("%s(%s)", p.Name, state))
	}
	return "[" + strings.Join(parts, " ") + "]"
}
