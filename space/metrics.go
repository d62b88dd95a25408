package space

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/wire"
)

// collector exposes the mesh in Prometheus form, read fresh at each scrape: nothing is
// counted twice and no goroutine runs between scrapes.
type collector struct{ m *Mesh }

var (
	descMessages = prometheus.NewDesc("cotal_messages_total",
		"Messages stored by kind (stream last sequence: channel=CHAT, dm=DM, anycast=TASK).", []string{"space", "kind"}, nil)
	descStored = prometheus.NewDesc("cotal_messages_retained",
		"Messages currently retained by stream.", []string{"space", "stream"}, nil)
	descPresence = prometheus.NewDesc("cotal_presence_entries",
		"Presence entries within the liveness TTL.", []string{"space"}, nil)
	descBackstop = prometheus.NewDesc("cotal_backstop_total",
		"Durable backstop events: fan-out entries, deliveries and drops, by event.", []string{"space", "event"}, nil)
	descLag = prometheus.NewDesc("cotal_backstop_lag",
		"Messages pending behind the delivery loops, by loop: fanout (CHAT messages not yet fanned out) and reader (backstop entries not yet re-authorized and handed to members).", []string{"space", "loop"}, nil)
	descRestarts = prometheus.NewDesc("cotal_delivery_restarts_total",
		"Delivery loop restarts by the supervisor.", []string{"space"}, nil)
	descSurfaced = prometheus.NewDesc("cotal_endpoint_surfaced_total",
		"Deliveries surfaced to handlers of in-process endpoints, by kind.", []string{"kind"}, nil)
	descTerminated = prometheus.NewDesc("cotal_endpoint_terminated_total",
		"Permanent anomalies terminated by in-process endpoints, by SPEC §5 reason.", []string{"reason"}, nil)
	descRedeliveries = prometheus.NewDesc("cotal_endpoint_redeliveries_total",
		"JetStream redeliveries seen by in-process endpoints.", nil, nil)
	descConnections = prometheus.NewDesc("cotal_connections",
		"Client connections to the broker, in-process ones included.", nil, nil)
	descCapped = prometheus.NewDesc("cotal_identity_connections_closed_total",
		"Connections the broker closed just after they connected because their identity already held limits.connections_per_identity.", nil, nil)
	descReconcile = prometheus.NewDesc("cotal_consumer_reconcile_total",
		"Consumer reconciliation by outcome: passes, deleted (consumers the layout does not allow), restored (bind-only durables put back to their spec), failed (passes that hit an error), pruned_copies (durable copies of channels a re-mint took away), purged_dms (DMs to ids that are no agent of the space, or acknowledged ones while the DM stream ran full), purged_tasks (tasks for roles no agent holds), purged_channel_posts (posts on the channels past one sender's limits.channels_per_identity).", []string{"space", "outcome"}, nil)
	descReplicaCurrent = prometheus.NewDesc("cotal_stream_replica_current",
		"On a cluster node, 1 when the replica of the stream on the node named replica has everything its leader has (the leader counts as current), else 0.", []string{"space", "stream", "replica"}, nil)
	descReplicaLag = prometheus.NewDesc("cotal_stream_replica_lag",
		"On a cluster node, how many RAFT entries the replica of the stream on the node named replica is behind its leader.", []string{"space", "stream", "replica"}, nil)
	descLeafLinks = prometheus.NewDesc("cotal_leaf_links",
		"Leaf links up now by space: 1 or 0 on a leaf mesh (0 while its hub is unreachable), the leaf meshes linked on a hub.", []string{"space"}, nil)
	descRelayDropped = prometheus.NewDesc("cotal_leaf_relay_dropped_total",
		"What a leaf link's relay refused to carry, by direction (out: to the other side, in: from it): the broker's answers on reply subjects an agent chose, stored copies, and messages naming an identity the side they came from does not hold.", []string{"space", "direction"}, nil)
	descFlooders = prometheus.NewDesc("cotal_flooders_closed_total",
		"Times the mesh closed the connections of a flooder, by kind: dm (a sender of a quarter or more of the DMs to ids no credential was minted for that a reclaim of a DM store past half full took back), tasks (a sender whose pending tasks held more than a quarter of a task store past half full), channels (a sender on more channels than limits.channels_per_identity).", []string{"space", "kind"}, nil)
	descOrphanPulls = prometheus.NewDesc("cotal_orphan_pulls_total",
		"Pull requests of the bind-only durables whose requester's connection ended, which the broker keeps to their expiry, by outcome: watched (pulls whose reply subject the mesh watched), handed_back (copies the broker handed to one, naked), remade (svc_ durables nobody pulled any more, made again), swept (dm_ and dlv_ durables nobody pulled any more whose unacknowledged copies were naked).", []string{"space", "outcome"}, nil)
	descUp = prometheus.NewDesc("cotal_component_up",
		"1 when the component is healthy, else 0 (see /healthz).", []string{"component"}, nil)
)

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descMessages, descStored, descPresence, descBackstop, descLag,
		descRestarts, descSurfaced, descTerminated, descRedeliveries, descConnections, descCapped, descReconcile, descReplicaCurrent, descReplicaLag, descLeafLinks, descRelayDropped, descFlooders, descOrphanPulls, descUp} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	for _, h := range c.m.Health() {
		up := 1.0
		if h.Err != nil {
			up = 0
		}
		ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, up, h.Name)
	}
	for s, n := range c.m.leafLinks() {
		ch <- prometheus.MustNewConstMetric(descLeafLinks, prometheus.GaugeValue, float64(n), s)
	}
	ch <- prometheus.MustNewConstMetric(descConnections, prometheus.GaugeValue, float64(c.m.broker.Server().NumClients()))
	ch <- prometheus.MustNewConstMetric(descCapped, prometheus.CounterValue, float64(c.m.broker.ConnectionsClosed()))
	c.m.mu.Lock()
	rts := make([]*spaceRuntime, 0, len(c.m.spaces))
	for _, rt := range c.m.spaces {
		rts = append(rts, rt)
	}
	eps := append([]*endpoint.Endpoint(nil), c.m.endpoints...)
	c.m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, rt := range rts {
		collectSpace(ctx, ch, rt, c.m.opts.clustered())
	}
	collectEndpoints(ch, eps)
}

func collectSpace(ctx context.Context, ch chan<- prometheus.Metric, rt *spaceRuntime, clustered bool) {
	n := rt.names
	kinds := map[string]string{n.ChatStream(): "channel", n.DMStream(): "dm", n.TaskStream(): "anycast"}
	for _, name := range []string{n.ChatStream(), n.DMStream(), n.TaskStream(), n.InboxStream(), n.DLVStream(),
		wire.KVStream(n.PresenceBucket())} {
		s, err := rt.js.Stream(ctx, name)
		if err != nil {
			continue
		}
		st := s.CachedInfo().State
		if clustered {
			collectReplicas(ch, rt.name, s.CachedInfo())
		}
		if kind, ok := kinds[name]; ok {
			ch <- prometheus.MustNewConstMetric(descMessages, prometheus.CounterValue, float64(st.LastSeq), rt.name, kind)
		}
		if name == wire.KVStream(n.PresenceBucket()) {
			ch <- prometheus.MustNewConstMetric(descPresence, prometheus.GaugeValue, float64(st.Msgs), rt.name)
			continue
		}
		ch <- prometheus.MustNewConstMetric(descStored, prometheus.GaugeValue, float64(st.Msgs), rt.name, name)
	}
	if rt.relay != nil {
		ch <- prometheus.MustNewConstMetric(descRelayDropped, prometheus.CounterValue, float64(rt.relayDropped[0].Load()), rt.name, "out")
		ch <- prometheus.MustNewConstMetric(descRelayDropped, prometheus.CounterValue, float64(rt.relayDropped[1].Load()), rt.name, "in")
	}
	for _, kind := range []string{"dm", "tasks", "channels"} {
		ch <- prometheus.MustNewConstMetric(descFlooders, prometheus.CounterValue, float64(rt.flooders(kind).Load()), rt.name, kind)
	}
	for outcome, v := range rt.pulls.outcomes() {
		ch <- prometheus.MustNewConstMetric(descOrphanPulls, prometheus.CounterValue, float64(v), rt.name, outcome)
	}
	r := &rt.reconciled
	for outcome, v := range map[string]int64{"passes": r.passes.Load(), "deleted": r.deleted.Load(),
		"restored": r.restored.Load(), "failed": r.failures.Load(), "pruned_copies": r.pruned.Load(),
		"purged_dms": r.purgedDMs.Load(), "purged_tasks": r.purgedTasks.Load(), "purged_channel_posts": r.purgedPosts.Load()} {
		ch <- prometheus.MustNewConstMetric(descReconcile, prometheus.CounterValue, float64(v), rt.name, outcome)
	}
	svc := rt.service()
	if svc == nil {
		return
	}
	st := svc.Stats()
	for event, v := range map[string]int64{
		"fanout_durable": st.FannedOutDurable, "fanout_mention": st.FannedOutMention,
		"delivered": st.ReaderDelivered, "dropped_unauthorized": st.ReaderDroppedUnauthorized,
		"dropped_not_eligible": st.ReaderDroppedNotEligible, "gave_up_unknown": st.ReaderGaveUpUnknown,
		"dropped_handoff_full": st.ReaderDroppedFull,
		"gap_messages":         st.GapMessages, "malformed": st.ReaderMalformed,
	} {
		ch <- prometheus.MustNewConstMetric(descBackstop, prometheus.CounterValue, float64(v), rt.name, event)
	}
	ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, float64(st.FanoutLag), rt.name, "fanout")
	ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, float64(st.ReaderLag), rt.name, "reader")
	ch <- prometheus.MustNewConstMetric(descRestarts, prometheus.CounterValue, float64(st.Restarts), rt.name)
}

// collectReplicas reports every replica of a stream, its leader first, as the leader sees
// them; a stream without a leader reports none (cotal_component_up{component="cluster"} is 0).
func collectReplicas(ch chan<- prometheus.Metric, space string, info *jetstream.StreamInfo) {
	if info.Cluster == nil || info.Cluster.Leader == "" {
		return
	}
	name := info.Config.Name
	ch <- prometheus.MustNewConstMetric(descReplicaCurrent, prometheus.GaugeValue, 1, space, name, info.Cluster.Leader)
	ch <- prometheus.MustNewConstMetric(descReplicaLag, prometheus.GaugeValue, 0, space, name, info.Cluster.Leader)
	for _, p := range info.Cluster.Replicas {
		current := 0.0
		if p.Current {
			current = 1
		}
		ch <- prometheus.MustNewConstMetric(descReplicaCurrent, prometheus.GaugeValue, current, space, name, p.Name)
		ch <- prometheus.MustNewConstMetric(descReplicaLag, prometheus.GaugeValue, float64(p.Lag), space, name, p.Name)
	}
}

func collectEndpoints(ch chan<- prometheus.Metric, eps []*endpoint.Endpoint) {
	var surfaced endpoint.KindCounts
	var terminated endpoint.ReasonCounts
	var redeliveries uint64
	for _, ep := range eps {
		st := ep.Stats()
		surfaced.Channel += st.Surfaced.Channel
		surfaced.DM += st.Surfaced.DM
		surfaced.Anycast += st.Surfaced.Anycast
		terminated.MalformedSubject += st.Terminated.MalformedSubject
		terminated.SenderMismatch += st.Terminated.SenderMismatch
		terminated.MalformedJSON += st.Terminated.MalformedJSON
		redeliveries += st.Redeliveries
	}
	for _, k := range []endpoint.MetaKind{endpoint.MetaChannel, endpoint.MetaDM, endpoint.MetaAnycast} {
		ch <- prometheus.MustNewConstMetric(descSurfaced, prometheus.CounterValue, float64(surfaced.Of(k)), string(k))
	}
	for _, r := range []string{wire.ReasonMalformedSubject, wire.ReasonSenderMismatch, wire.ReasonMalformedJSON} {
		ch <- prometheus.MustNewConstMetric(descTerminated, prometheus.CounterValue, float64(terminated.Of(r)), r)
	}
	ch <- prometheus.MustNewConstMetric(descRedeliveries, prometheus.CounterValue, float64(redeliveries))
}
