package space

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
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

// statusBudget bounds a whole Status, below the admin API's 30 s per request: on a cluster
// whose streams elect leaders every call may take opTimeout, and what is not read by then
// is named as unread rather than failing the whole report.
const statusBudget = 20 * time.Second

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
	// Error says why the stream could not be read (its figures are then zero): on a cluster,
	// typically no leader answered in time.
	Error string `json:"error,omitempty"`
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
	// Error says why the consumer could not be read; the counts are then zero.
	Error string `json:"error,omitempty"`
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
	// (docs/durable.md "Gaps and losses"); listMemberships lists the durable ones as gaps.
	// Counts of channels the member holds a membership record on are kept in that record across
	// restarts, the others since the mesh started. Empty when none was lost.
	Dropped map[string]int64 `json:"dropped,omitempty"`
}

// SpaceStatus is one space of a running mesh.
type SpaceStatus struct {
	Name     string          `json:"name"`
	Link     string          `json:"link,omitempty"`
	Streams  []StreamStatus  `json:"streams"`
	Backstop delivery.Stats  `json:"backstop"`
	Members  []MemberBacklog `json:"members"`
	// Error says why the space, or its members, could not be listed.
	Error string `json:"error,omitempty"`
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
// A stream, consumer or space that cannot be read does not fail the report: its Error says
// why, and the rest is filled in (Status.Errors lists them all).
func (m *Mesh) Status(ctx context.Context) (*Status, error) {
	ctx, cancel := context.WithTimeout(ctx, statusBudget)
	defer cancel()
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
		st.Spaces = append(st.Spaces, m.spaceStatus(ctx, name))
	}
	return st, nil
}

// Errors names every part of st that could not be read, with why; empty when st is whole.
func (st *Status) Errors() []string {
	var out []string
	for _, s := range st.Spaces {
		if s.Error != "" {
			out = append(out, fmt.Sprintf("space %s: %s", s.Name, s.Error))
		}
		for _, stream := range s.Streams {
			if stream.Error != "" {
				out = append(out, stream.Error)
			}
		}
		for _, mb := range s.Members {
			for _, b := range []*Backlog{&mb.DM, &mb.Durable, mb.Anycast} {
				if b != nil && b.Error != "" {
					out = append(out, fmt.Sprintf("%s's backlog: %s", mb.Name, b.Error))
				}
			}
		}
	}
	return out
}

// spaceStatus reads one space. Its streams are read at once, so a cluster stream whose info
// times out costs opTimeout once, not per stream.
func (m *Mesh) spaceStatus(ctx context.Context, name string) SpaceStatus {
	ss := SpaceStatus{Name: name, Members: []MemberBacklog{}}
	rt, err := m.runtime(name)
	if err != nil {
		ss.Error = err.Error()
		return ss
	}
	if svc := rt.service(); svc != nil {
		ss.Backstop = svc.Stats()
	}
	ss.Link, _ = m.Link(name)
	n := rt.names
	names := []string{n.ChatStream(), n.DMStream(), n.TaskStream(), n.InboxStream(), n.DLVStream()}
	ss.Streams = make([]StreamStatus, len(names))
	var wg sync.WaitGroup
	for i, s := range names {
		wg.Go(func() { ss.Streams[i] = m.streamStatus(ctx, rt, s) })
	}
	wg.Wait()
	recs, err := m.activeAgents(name)
	if err != nil {
		ss.Error = fmt.Sprintf("list its members: %v", err)
		return ss
	}
	unread := map[string]string{} // a consumer of an unread stream is not asked: it would wait as long
	for _, s := range ss.Streams {
		if s.Error != "" {
			unread[s.Name] = s.Error
		}
	}
	for _, rec := range recs {
		b, _ := rt.backlog(ctx, rec, unread) // each unreadable consumer carries its Error
		ss.Members = append(ss.Members, b)
	}
	return ss
}

// streamStatus reads one stream's figures, or says in Error why it could not.
func (m *Mesh) streamStatus(ctx context.Context, rt *spaceRuntime, name string) StreamStatus {
	info, err := streamInfo(ctx, rt.js, name, "")
	if err != nil {
		return StreamStatus{Name: name, Error: err.Error()}
	}
	stream := StreamStatus{Name: name, Messages: info.State.Msgs,
		Bytes: info.State.Bytes, Consumers: info.State.Consumers, LastSeq: info.State.LastSeq}
	if m.opts.clustered() {
		streamReplicas(&stream, info)
	}
	return stream
}

// Pending reports what waits for one instance of space, named by its id or by the display
// name of exactly one active agent credential.
func (m *Mesh) Pending(ctx context.Context, space, who string) (*MemberBacklog, error) {
	rt, err := m.runtime(space)
	if err != nil {
		return nil, err
	}
	rec, err := m.lookupInstance(space, who)
	if err != nil {
		return nil, err
	}
	b, err := rt.backlog(ctx, rec, nil)
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

// backlog reads the bind-only consumers of rec (SPEC §8; docs/storage.md "Consumers"). A
// consumer that cannot be read carries its Error, and the errors are returned joined; one on a
// stream of unread (stream name to why) is not asked.
func (rt *spaceRuntime) backlog(ctx context.Context, rec provisioner.Record, unread map[string]string) (MemberBacklog, error) {
	n := rt.names
	b := MemberBacklog{ID: rec.ID, Name: rec.Name, Role: rec.Grants.Role}
	var errs []error
	read := func(stream, name string) Backlog {
		c, err := Backlog{Consumer: name}, error(nil)
		if why, ok := unread[stream]; ok {
			err = fmt.Errorf("consumer %s on %s: its stream could not be read: %s", name, stream, why)
		} else {
			c, err = consumerBacklog(ctx, rt.js, stream, name)
		}
		if err != nil {
			c.Error = err.Error()
			errs = append(errs, err)
		}
		return c
	}
	b.DM = read(n.DMStream(), n.DMConsumer(rec.ID))
	b.Durable = read(n.DLVStream(), n.DLVConsumer(rec.ID))
	if svc := rt.service(); svc != nil {
		b.Dropped = svc.DroppedCopies(rec.ID)
	}
	if rec.Grants.Role != "" {
		svc := read(n.TaskStream(), n.SvcConsumer(rec.Grants.Role))
		b.Anycast = &svc
	}
	return b, errors.Join(errs...)
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
