package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/cotal-go/cotal/broker"
	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

// benchSpace is the one space every workload runs in.
const benchSpace = "main"

// The settings cotal's streams and bind-only consumers have (docs/storage.md "Streams",
// "Consumers"), which the raw side's streams and consumers copy.
const (
	dupWindow   = 2 * time.Minute
	perSubject  = 1000
	ackWait     = 60 * time.Second
	closeBudget = 30 * time.Second
)

// envOptions choose the mesh a workload case runs on.
type envOptions struct {
	// file stores streams on disk in a temporary directory instead of memory.
	file bool
	// sync is the file store's durability mode; default broker.SyncAlways.
	sync broker.SyncMode
	// auth runs the authenticated mesh; agents then get minted credentials.
	auth bool
}

// env is the mesh one workload case runs on, and every connection opened on it. In open mode
// admin is a privileged connection that does the provisioner's part for cotal's instances and
// creates the raw side's streams; in authenticated mode it is nil.
type env struct {
	mesh    *space.Mesh
	names   wire.Names
	storage jetstream.StorageType
	admin   *nats.Conn
	js      jetstream.JetStream

	mu    sync.Mutex
	conns []*nats.Conn
}

func newEnv(ctx context.Context, o envOptions) (*env, error) {
	opts := space.Options{Spaces: []string{benchSpace}, Open: !o.auth, Memory: !o.file, Sync: o.sync}
	m, err := space.Start(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("start mesh: %w", err)
	}
	e := &env{mesh: m, names: wire.NewNames(benchSpace), storage: jetstream.MemoryStorage}
	if o.file {
		e.storage = jetstream.FileStorage
	}
	if o.auth {
		return e, nil
	}
	if e.admin, e.js, err = e.conn(); err != nil {
		return nil, errors.Join(err, e.close())
	}
	return e, nil
}

// close closes every raw connection, then the mesh with its endpoints.
func (e *env) close() error {
	e.mu.Lock()
	conns := e.conns
	e.conns = nil
	e.mu.Unlock()
	for _, nc := range conns {
		nc.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeBudget)
	defer cancel()
	return e.mesh.Close(ctx)
}

// conn opens a raw in-process connection to the mesh's server, closed with the env.
func (e *env) conn() (*nats.Conn, jetstream.JetStream, error) {
	nc, err := nats.Connect("", nats.InProcessServer(e.mesh.InProcess()), nats.Name("bench-raw"))
	if err != nil {
		return nil, nil, fmt.Errorf("raw connection: %w", err)
	}
	e.mu.Lock()
	e.conns = append(e.conns, nc)
	e.mu.Unlock()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, nil, fmt.Errorf("raw jetstream: %w", err)
	}
	return nc, js, nil
}

// rawStream creates a stream for the raw side with the base settings of cotal's streams
// (docs/storage.md "Streams"); adjust changes it further.
func (e *env) rawStream(ctx context.Context, name, subject string, adjust ...func(*jetstream.StreamConfig)) error {
	cfg := jetstream.StreamConfig{
		Name: name, Subjects: []string{subject}, Retention: jetstream.LimitsPolicy, Storage: e.storage,
		Replicas: 1, Discard: jetstream.DiscardOld, MaxMsgs: -1, MaxBytes: -1, Duplicates: dupWindow,
	}
	for _, a := range adjust {
		a(&cfg)
	}
	if _, err := e.js.CreateOrUpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("create raw stream %s: %w", name, err)
	}
	return nil
}

// rawConsumer creates a durable pull consumer with the settings of cotal's bind-only
// consumers: explicit ack, ack wait 60 s, deliver all.
func (e *env) rawConsumer(ctx context.Context, stream, name, filter string) error {
	_, err := e.js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{
		Durable: name, FilterSubject: filter, AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: ackWait, DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return fmt.Errorf("create consumer %s on %s: %w", name, stream, err)
	}
	return nil
}

// drained reports whether a consumer has nothing pending and nothing waiting for an ack.
func (e *env) drained(ctx context.Context, stream, consumer string) (bool, error) {
	c, err := e.js.Consumer(ctx, stream, consumer) // one CONSUMER.INFO request
	if err != nil {
		return false, err
	}
	info := c.CachedInfo()
	return info.NumPending == 0 && info.NumAckPending == 0, nil
}

// setClass writes channel's registry entry with its delivery class (SPEC §7).
func (e *env) setClass(ctx context.Context, channel string, class wire.DeliveryClass) error {
	kv, err := e.js.KeyValue(ctx, e.names.ChannelsBucket())
	if err != nil {
		return err
	}
	data, err := json.Marshal(wire.ChannelConfig{DeliveryClass: class})
	if err != nil {
		return err
	}
	_, err = kv.Put(ctx, wire.SanitizeChannel(channel), data)
	return err
}

// agent connects an in-process Endpoint named name with role and handler h. On the
// authenticated mesh the mesh mints its credential; on the open one admin pre-creates its
// bind-only consumers, as the provisioner does at mint (SPEC §8).
func (e *env) agent(ctx context.Context, name, role string, h endpoint.Handler) (*endpoint.Endpoint, error) {
	spec := space.AgentSpec{Space: benchSpace, Name: name,
		Endpoint: endpoint.Options{Role: role, Handler: h}}
	if e.admin == nil {
		spec.Grants = provisioner.Grants{Role: role}
		return e.mesh.Endpoint(ctx, spec)
	}
	id, err := newID()
	if err != nil {
		return nil, err
	}
	if err := e.provisionInstance(ctx, id, role); err != nil {
		return nil, err
	}
	spec.Endpoint.ID = id
	return e.mesh.Endpoint(ctx, spec)
}

// provisionInstance creates an instance's dm_<id> and dlv_<id>, and svc_<role> with a role, as
// the mesh does at mint (SPEC §8; docs/storage.md "Consumers").
func (e *env) provisionInstance(ctx context.Context, id, role string) error {
	n := e.names
	if err := e.rawConsumer(ctx, n.DMStream(), n.DMConsumer(id), n.Prefix()+".inst."+id+".*"); err != nil {
		return err
	}
	if err := e.rawConsumer(ctx, n.DLVStream(), n.DLVConsumer(id), n.DLVSubject(id)); err != nil {
		return err
	}
	if role == "" {
		return nil
	}
	return e.rawConsumer(ctx, n.TaskStream(), n.SvcConsumer(role), n.Prefix()+".svc."+role+".*")
}

// newID is a fresh instance id of the authenticated shape, a user nkey (SPEC §2).
func newID() (string, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return "", fmt.Errorf("instance id: %w", err)
	}
	return kp.PublicKey()
}
