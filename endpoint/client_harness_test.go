package endpoint_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/jsconfig"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// harness gives a client test a provisioned space and a privileged connection to it, to do what
// a hostile or broken peer could (raw publishes, deleted consumers, registry writes).
// newHarness runs the open mesh of package space (its streams, buckets and services);
// newBareHarness runs a bare nats-server provisioned here with the streams of docs/storage.md
// and no mesh services, for tests that stand in their own delivery service or tune the broker.
// Authenticated behaviour (ACL refusals, minted identities) is tested on spacetest.New in
// client_mesh_test.go.
type harness struct {
	t        *testing.T
	srv      *server.Server
	provider nats.InProcessConnProvider
	nc       *nats.Conn // privileged test connection
	js       jetstream.JetStream
	space    string
	names    wire.Names
}

const testSpace = "main"

// newHarness starts an open (unauthenticated) test mesh.
func newHarness(t *testing.T) *harness {
	t.Helper()
	m := spacetest.New(t, func(o *space.Options) { o.Open = true })
	h := &harness{t: t, srv: m.Broker().Server(), provider: m.InProcess()}
	h.attach()
	return h
}

// newBareHarness starts a bare JetStream server, configured further by configure.
func newBareHarness(t *testing.T, configure ...func(*server.Options)) *harness {
	t.Helper()
	opts := &server.Options{
		ServerName: "client-test", DontListen: true, JetStream: true, StoreDir: t.TempDir(),
		// The memory limit only has to hold the layout's stream byte limits (wire.StreamLimits.Total):
		// memory streams take what they store, not what they may.
		JetStreamMaxMemory: 4 << 30, JetStreamMaxStore: 256 << 20, NoLog: true, NoSigs: true,
	}
	for _, c := range configure {
		c(opts)
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatalf("new server: %v", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	t.Cleanup(func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	h := &harness{t: t, srv: srv, provider: srv}
	h.attach()
	h.provision()
	return h
}

// attach opens the privileged connection and makes channels live by default, so no test
// waits on a durable backstop it does not ask for.
func (h *harness) attach() {
	nc, err := nats.Connect("", nats.InProcessServer(h.provider))
	if err != nil {
		h.t.Fatalf("connect: %v", err)
	}
	h.t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		h.t.Fatalf("jetstream: %v", err)
	}
	h.nc, h.js, h.space, h.names = nc, js, testSpace, wire.NewNames(testSpace)
}

// provision creates the space's streams and buckets from wire's layout, as package space does.
func (h *harness) provision() {
	for _, cfg := range jsconfig.Streams(h.names.Streams(), jetstream.MemoryStorage) {
		if _, err := h.js.CreateStream(context.Background(), cfg); err != nil {
			h.t.Fatalf("create stream %s: %v", cfg.Name, err)
		}
	}
	h.setDefaults(wire.ChannelDefaults{DeliveryClass: wire.DeliveryLive})
}

func (h *harness) kv(bucket string) jetstream.KeyValue {
	kv, err := h.js.KeyValue(context.Background(), bucket)
	if err != nil {
		h.t.Fatalf("bucket %s: %v", bucket, err)
	}
	return kv
}

func (h *harness) setDefaults(d wire.ChannelDefaults) {
	h.putJSON(h.names.ChannelsBucket(), wire.DefaultsKey, d)
}

func (h *harness) setChannel(channel string, c wire.ChannelConfig) {
	h.putJSON(h.names.ChannelsBucket(), channel, c)
}

func (h *harness) putJSON(bucket, key string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.kv(bucket).Put(context.Background(), key, data); err != nil {
		h.t.Fatalf("put %s/%s: %v", bucket, key, err)
	}
}

// provisionInstance creates the bind-only consumers of an instance, as the mesh does.
func (h *harness) provisionInstance(id, role string) {
	for _, c := range h.names.InstanceConsumerSpecs(id, role, wire.DefaultAckWait) {
		if _, err := h.js.CreateOrUpdateConsumer(context.Background(), c.Stream, jsconfig.Consumer(c)); err != nil {
			h.t.Fatalf("create consumer %s: %v", c.Name, err)
		}
	}
}

// newID returns a fresh instance id of the authenticated shape (a user nkey, SPEC §2).
func newID(t *testing.T) string {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	id, err := kp.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// peer is a connected test Endpoint and what its Handler received.
type peer struct {
	*endpoint.Endpoint
	rec *recorder
}

// connect provisions and connects an open-mode Endpoint named name, closed at cleanup.
func (h *harness) connect(name string, configure ...func(*endpoint.Options)) *peer {
	h.t.Helper()
	rec := &recorder{}
	opts := endpoint.Options{
		InProcess: h.provider, Space: h.space, ID: newID(h.t), Name: name, Handler: rec.handle,
		Heartbeat: 500 * time.Millisecond, LivenessWindow: 3 * time.Second,
	}
	for _, c := range configure {
		c(&opts)
	}
	h.provisionInstance(opts.ID, opts.Role)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e, err := endpoint.Connect(ctx, opts)
	if err != nil {
		h.t.Fatalf("connect %s: %v", name, err)
	}
	h.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.Close(ctx); err != nil {
			h.t.Errorf("close %s: %v", name, err)
		}
	})
	return &peer{Endpoint: e, rec: rec}
}

// publishRaw publishes data on subject through JetStream from the privileged connection, as
// a hostile or broken peer could.
func (h *harness) publishRaw(subject string, data []byte) {
	h.t.Helper()
	if _, err := h.js.Publish(context.Background(), subject, data); err != nil {
		h.t.Fatalf("publish %s: %v", subject, err)
	}
}

func (h *harness) consumerInfo(stream, name string) *jetstream.ConsumerInfo {
	h.t.Helper()
	c, err := h.js.Consumer(context.Background(), stream, name)
	if err != nil {
		h.t.Fatalf("consumer %s: %v", name, err)
	}
	info, err := c.Info(context.Background())
	if err != nil {
		h.t.Fatalf("consumer info %s: %v", name, err)
	}
	return info
}

// recorder is a Handler that keeps every delivery; fail, if set, decides its return value.
type recorder struct {
	mu   sync.Mutex
	got  []endpoint.Delivery
	fail func(d endpoint.Delivery) error
}

func (r *recorder) handle(_ context.Context, d endpoint.Delivery) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, d)
	if r.fail != nil {
		return r.fail(d)
	}
	return nil
}

func (r *recorder) setFail(f func(endpoint.Delivery) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = f
}

func (r *recorder) all() []endpoint.Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]endpoint.Delivery(nil), r.got...)
}

// withID returns the deliveries of message id.
func (r *recorder) withID(id string) []endpoint.Delivery {
	var out []endpoint.Delivery
	for _, d := range r.all() {
		if d.Message.ID == id {
			out = append(out, d)
		}
	}
	return out
}

// settle bounds every wait for a condition in these tests.
const settle = 15 * time.Second

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func text(s string) []wire.Part { return []wire.Part{wire.TextPart(s)} }
