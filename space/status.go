package space

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/cotal-go/cotal/delivery"
	"github.com/cotal-go/cotal/provisioner"
)

// Errors of the operator reports and of channel administration.
var (
	// ErrUnknownInstance means no active credential of the space has the id or name asked for.
	ErrUnknownInstance = errors.New("no such instance")
	// ErrAmbiguousName means more than one active credential carries the name asked for.
	ErrAmbiguousName = errors.New("name is ambiguous")
	// ErrUnknownChannel means a channel has no retained message and no registry entry.
	ErrUnknownChannel = errors.New("unknown channel")
)

// opTimeout bounds each broker call an operator report makes.
const opTimeout = 5 * time.Second

// ComponentStatus is ComponentHealth in a form that survives JSON: OK, or the error text.
type ComponentStatus struct {
	Name  string `json:"name"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// StreamStatus is one stream's size.
type StreamStatus struct {
	Name      string `json:"name"`
	Messages  uint64 `json:"messages"`
	Bytes     uint64 `json:"bytes"`
	Consumers int    `json:"consumers"`
	LastSeq   uint64 `json:"lastSeq"`
	// Replicas is how many copies the stream keeps, Leader the node whose copy takes the
	// writes ("" while the group elects one) and Followers the other copies with their current
	// state and lag. Set on a cluster node only.
	Replicas  int    `json:"replicas,omitempty"`
	Leader    string `json:"leader,omitempty"`
	Followers []Peer `json:"followers,omitempty"`
}

// Backlog is what one bind-only consumer holds for its instance (SPEC §8): messages not yet
// delivered (Pending) and delivered but not acknowledged (AckPending). Missing means the
// consumer does not exist, so nothing is kept for the instance on that path.
type Backlog struct {
	Consumer   string `json:"consumer"`
	Pending    uint64 `json:"pending"`
	AckPending int    `json:"ackPending"`
	Missing    bool   `json:"missing,omitempty"`
}

// MemberBacklog is everything that waits for one instance in its own consumers: its DMs
// (dm_<id>), its role's anycasts (svc_<role>, shared by every holder of the role) and its
// durable copies (dlv_<id>). Backstop entries the trusted reader has not handed over yet are
// counted for the whole space only (delivery.Stats.ReaderLag): INBOX_<s> keeps entries after
// the reader acknowledges them, so its per-member counts are not a backlog.
type MemberBacklog struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Role    string   `json:"role,omitempty"`
	DM      Backlog  `json:"dm"`
	Anycast *Backlog `json:"anycast,omitempty"`
	Durable Backlog  `json:"durable"`
	// Dropped counts, by channel, the durable and @mention copies the trusted reader refused
	// because dlv_<id> already held as many unacknowledged copies as DLV_<s> keeps per member
	// (issue 12 item 9); listMemberships lists the durable ones as gaps. Counts of channels
	// the member holds a membership record on are kept in that record across restarts, the
	// others since the mesh started. Empty when none was lost.
	Dropped map[string]int64 `json:"dropped,omitempty"`
}

// SpaceStatus is one space of a running mesh.
type SpaceStatus struct {
	Name     string          `json:"name"`
	Link     string          `json:"link,omitempty"`
	Streams  []StreamStatus  `json:"streams"`
	Backstop delivery.Stats  `json:"backstop"`
	Members  []MemberBacklog `json:"members"`
}

// Status is the operator's view of a running mesh: the health of every component, client
// connections, and per space the streams and what waits for each active agent.
type Status struct {
	Dir         string            `json:"dir"`
	Connections int               `json:"connections"`
	Health      []ComponentStatus `json:"health"`
	Spaces      []SpaceStatus     `json:"spaces"`
	// Cluster is the NATS cluster as this node sees it; nil on a mesh that runs alone.
	Cluster *ClusterStatus `json:"cluster,omitempty"`
	// Leaf is the mesh's side of its leaf links; nil on a mesh that runs none.
	Leaf *LeafStatus `json:"leaf,omitempty"`
}

// Status builds the operator's view of the mesh. Members are the space's active agent
// credentials; an instance without a credential (open mode) has no registry entry to list.
func (m *Mesh) Status(ctx context.Context) (*Status, error) {
	st := &Status{Dir: m.dir, Connections: m.broker.Server().NumClients(), Cluster: m.clusterStatus(),
		Leaf: m.leafStatus()}
	if st.Cluster != nil {
		st.Cluster.Backstops = m.backstopHolders(ctx)
	}
	for _, h := range m.Health() {
		c := ComponentStatus{Name: h.Name, OK: h.Err == nil}
		if h.Err != nil {
			c.Error = h.Err.Error()
		}
		st.Health = append(st.Health, c)
	}
	for _, name := range m.Spaces() {
		ss, err := m.spaceStatus(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("space %s: %w", name, err)
		}
		st.Spaces = append(st.Spaces, ss)
	}
	return st, nil
}

func (m *Mesh) spaceStatus(ctx context.Context, name string) (SpaceStatus, error) {
	rt, err := m.space(name)
	if err != nil {
		return SpaceStatus{}, err
	}
	ss := SpaceStatus{Name: name, Members: []MemberBacklog{}}
	if svc := rt.service(); svc != nil {
		ss.Backstop = svc.Stats()
	}
	ss.Link, _ = m.Link(name)
	n := rt.names
	for _, s := range []string{n.ChatStream(), n.DMStream(), n.TaskStream(), n.InboxStream(), n.DLVStream()} {
		info, err := streamInfo(ctx, rt.js, s, "")
		if err != nil {
			return ss, err
		}
		stream := StreamStatus{Name: s, Messages: info.State.Msgs,
			Bytes: info.State.Bytes, Consumers: info.State.Consumers, LastSeq: info.State.LastSeq}
		if m.opts.clustered() {
			streamReplicas(&stream, info)
		}
		ss.Streams = append(ss.Streams, stream)
	}
	recs, err := m.activeAgents(name)
	if err != nil {
		return ss, err
	}
	for _, rec := range recs {
		b, err := rt.backlog(ctx, rec)
		if err != nil {
			return ss, err
		}
		ss.Members = append(ss.Members, b)
	}
	return ss, nil
}

// Pending reports what waits for one instance of space, named by its id or by the display
// name of exactly one active agent credential.
func (m *Mesh) Pending(ctx context.Context, space, who string) (*MemberBacklog, error) {
	rt, err := m.space(space)
	if err != nil {
		return nil, err
	}
	rec, err := m.lookupInstance(space, who)
	if err != nil {
		return nil, err
	}
	b, err := rt.backlog(ctx, rec)
	if err != nil {
		return nil, err
	}
	return &b, nil
}

// lookupInstance finds the credential record of an id, or of the one active agent named who.
func (m *Mesh) lookupInstance(space, who string) (provisioner.Record, error) {
	if m.store == nil {
		return provisioner.Record{}, m.noStore()
	}
	if nkeys.IsValidPublicUserKey(who) {
		rec, err := m.store.Record(space, who)
		if errors.Is(err, provisioner.ErrUnknownCredential) {
			return rec, fmt.Errorf("%w: no credential of space %s has id %s", ErrUnknownInstance, space, who)
		}
		return rec, err
	}
	recs, err := m.activeAgents(space)
	if err != nil {
		return provisioner.Record{}, err
	}
	var found []provisioner.Record
	for _, r := range recs {
		if strings.EqualFold(r.Name, who) {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 0:
		return provisioner.Record{}, fmt.Errorf("%w: no active agent credential of space %s is named %q", ErrUnknownInstance, space, who)
	case 1:
		return found[0], nil
	}
	ids := make([]string, len(found))
	for i, r := range found {
		ids[i] = r.ID
	}
	return provisioner.Record{}, fmt.Errorf("%w: %d active credentials are named %q (%s); name the instance by its id", ErrAmbiguousName, len(found), who, strings.Join(ids, ", "))
}

// activeAgents lists the active agent credentials of space, by name then id.
func (m *Mesh) activeAgents(space string) ([]provisioner.Record, error) {
	if m.store == nil {
		return nil, nil
	}
	recs, err := m.store.List(space)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	out := recs[:0]
	for _, r := range recs {
		if r.Profile == provisioner.ProfileAgent && r.Active(now) {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// backlog reads the bind-only consumers of rec (SPEC §8; LAYOUT.md "Consumers").
func (rt *spaceRuntime) backlog(ctx context.Context, rec provisioner.Record) (MemberBacklog, error) {
	n := rt.names
	b := MemberBacklog{ID: rec.ID, Name: rec.Name, Role: rec.Grants.Role}
	var err error
	if b.DM, err = consumerBacklog(ctx, rt.js, n.DMStream(), n.DMConsumer(rec.ID)); err != nil {
		return b, err
	}
	if b.Durable, err = consumerBacklog(ctx, rt.js, n.DLVStream(), n.DLVConsumer(rec.ID)); err != nil {
		return b, err
	}
	if svc := rt.service(); svc != nil {
		b.Dropped = svc.DroppedCopies(rec.ID)
	}
	if rec.Grants.Role != "" {
		svc, err := consumerBacklog(ctx, rt.js, n.TaskStream(), n.SvcConsumer(rec.Grants.Role))
		if err != nil {
			return b, err
		}
		b.Anycast = &svc
	}
	return b, nil
}

func consumerBacklog(ctx context.Context, js jetstream.JetStream, stream, name string) (Backlog, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	b := Backlog{Consumer: name}
	c, err := js.Consumer(ctx, stream, name)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		b.Missing = true
		return b, nil
	}
	if err != nil {
		return b, fmt.Errorf("consumer %s on %s: %w", name, stream, err)
	}
	info := c.CachedInfo()
	b.Pending, b.AckPending = info.NumPending, info.NumAckPending
	return b, nil
}

// streamInfo reads a stream's state, with per-subject counts when filter is set.
func streamInfo(ctx context.Context, js jetstream.JetStream, name, filter string) (*jetstream.StreamInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	s, err := js.Stream(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", name, err)
	}
	if filter == "" {
		return s.CachedInfo(), nil
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return nil, fmt.Errorf("stream %s subjects %s: %w", name, filter, err)
	}
	return info, nil
}

// Links returns the join link of every space, keyed by space (SPEC §10).
func (m *Mesh) Links() (map[string]string, error) {
	out := map[string]string{}
	for _, s := range m.Spaces() {
		link, err := m.Link(s)
		if err != nil {
			return nil, err
		}
		out[s] = link
	}
	return out, nil
}
