package space

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
)

// ClusterStatus is a cluster node's view of the NATS cluster, read from its embedded server:
// the nodes of the JetStream metadata group and its leader. Status has none on a mesh that runs
// alone.
type ClusterStatus struct {
	// Name is the cluster name every node shares.
	Name string `json:"name"`
	// Node is this node's server name.
	Node string `json:"node"`
	// MetaLeader is the server name of the JetStream metadata group's leader; empty while
	// the group has none, when no stream or consumer can be created or changed.
	MetaLeader string `json:"metaLeader"`
	// Nodes are the peers of the metadata group, this node included, by name.
	Nodes []Peer `json:"nodes"`
	// Backstops name, per space this node may run the durable backstop of, the node that runs
	// it now (docs/durable.md "The cluster lease"); empty on a node without the cluster
	// backstop file.
	Backstops []BackstopHolder `json:"backstops,omitempty"`
}

// Peer is one node of a RAFT group: of the metadata group in ClusterStatus.Nodes, of a
// stream's group in StreamStatus.Followers. nats-server's PeerInfo, kept to what an operator
// reads.
type Peer struct {
	Name string `json:"name"`
	// Current is true when the peer was seen recently and has applied everything, as the
	// group's leader knows it. Only the leader follows every peer's progress, so in
	// ClusterStatus.Nodes read on a node that does not lead the metadata group, Current of
	// another follower means connected and not offline.
	Current bool `json:"current"`
	// Connected is true when this node has a route to the peer (always, for itself); set in
	// ClusterStatus.Nodes only.
	Connected bool `json:"connected,omitempty"`
	// Offline is true when the peer stopped, or has no route to this node and was not heard
	// from (as this node knows it) in the last 10 s: killed, or cut off.
	Offline bool `json:"offline,omitempty"`
	// Active is how long ago the peer was last heard from; zero for this node.
	Active time.Duration `json:"active,omitempty"`
	// Lag is how many RAFT entries the peer is behind.
	Lag uint64 `json:"lag,omitempty"`
}

// peerLostAfter is how long a peer with no route to this node may go unheard before
// ClusterStatus calls it offline; one heard from since is unreachable from here only.
const peerLostAfter = 10 * time.Second

// clusterStatus reads the metadata group from the embedded server: nil on a mesh that runs
// alone. The server lists the group's other peers; this node is current when its JetStream
// is.
func (m *Mesh) clusterStatus() *ClusterStatus {
	if !m.opts.clustered() {
		return nil
	}
	ns := m.broker.Server()
	cs := &ClusterStatus{Name: m.opts.Cluster.Name, Node: ns.Name(),
		Nodes: []Peer{{Name: ns.Name(), Current: ns.JetStreamIsCurrent(), Connected: true}}}
	routed := map[string]bool{}
	if rz, err := ns.Routez(&server.RoutezOptions{}); err == nil {
		for _, r := range rz.Routes {
			routed[r.RemoteName] = true
		}
	}
	jsi, err := ns.Jsz(&server.JSzOptions{})
	if err != nil || jsi.Meta == nil {
		return cs
	}
	cs.MetaLeader = jsi.Meta.Leader
	for _, p := range jsi.Meta.Replicas {
		if p.Name == ns.Name() {
			continue
		}
		peer := Peer{Name: p.Name, Current: p.Current, Connected: routed[p.Name], Offline: p.Offline, Active: p.Active, Lag: p.Lag}
		// A killed node sends no shutdown notice, so the group marks it offline late or never;
		// a follower does not hear from the other followers at all (Active zero).
		peer.Offline = peer.Offline || !peer.Connected && (p.Active == 0 || p.Active > peerLostAfter)
		if cs.MetaLeader != ns.Name() && p.Name != cs.MetaLeader {
			// A follower hears from the leader only; of the others it knows the route.
			peer.Current, peer.Lag = peer.Connected && !peer.Offline, 0
		}
		cs.Nodes = append(cs.Nodes, peer)
	}
	slices.SortFunc(cs.Nodes, func(a, b Peer) int { return strings.Compare(a.Name, b.Name) })
	return cs
}

// clusterHealth is nil on a mesh that runs alone, and in a cluster when the metadata group
// has a leader and every stream of the mesh this node holds a replica of has one: a group
// without a leader takes no writes. Two nodes of three keep both, so one node down leaves
// the others healthy. Streams with no replica on this node (a cluster of more than three)
// are judged by the nodes holding them.
func (m *Mesh) clusterHealth() error {
	if !m.opts.clustered() {
		return nil
	}
	jsi, err := m.broker.Server().Jsz(&server.JSzOptions{Accounts: true, Streams: true})
	if err != nil {
		return fmt.Errorf("read JetStream's cluster state: %w", err)
	}
	if jsi.Meta == nil || jsi.Meta.Leader == "" {
		return errors.New("the JetStream metadata group has no leader: fewer than a majority of the nodes are up and connected, so no stream can be created or changed")
	}
	var leaderless []string
	for _, acc := range jsi.AccountDetails {
		for _, s := range acc.Streams {
			if s.Cluster != nil && s.Cluster.Leader == "" {
				leaderless = append(leaderless, s.Name)
			}
		}
	}
	if len(leaderless) > 0 {
		slices.Sort(leaderless)
		return fmt.Errorf("streams without a leader, which take no messages: %s", strings.Join(leaderless, ", "))
	}
	return nil
}

// streamReplicas fills a stream's replica count, leader and followers from the stream info
// its leader answered, so the followers' current and lag are the leader's own figures.
func streamReplicas(ss *StreamStatus, info *jetstream.StreamInfo) {
	ss.Replicas = info.Config.Replicas
	ss.Followers = []Peer{}
	if info.Cluster == nil {
		return
	}
	ss.Leader = info.Cluster.Leader
	for _, p := range info.Cluster.Replicas {
		ss.Followers = append(ss.Followers, Peer{Name: p.Name, Current: p.Current, Offline: p.Offline, Active: p.Active, Lag: p.Lag})
	}
}
