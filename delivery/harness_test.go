package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/jsconfig"
	"github.com/cotal-go/cotal/wire"
)

// The harness runs a bare embedded JetStream server with two users: "delivery", holding
// exactly wire.DeliveryPermissions, and "agent", allowed everything, which plays the agents and the mesh.
const (
	testSpace        = "main"
	deliveryInbox    = "_INBOX_delivery"
	waitFor          = 20 * time.Second
	pollEvery        = 10 * time.Millisecond
	deliveryUser     = "delivery"
	controlUser      = "delivery-control"
	agentUser        = "agent"
	testUserPassword = "pw"
)

var testNames = wire.NewNames(testSpace)

// harness is one space on its own server, with a running Service.
type harness struct {
	t      testing.TB
	dir    string
	srv    *server.Server
	nc     *nats.Conn // the agent/mesh connection
	js     jetstream.JetStream
	acl    *aclMap
	cfg    Config
	svc    *Service
	svcNC  *nats.Conn
	ctlNC  *nats.Conn // the control listener's connection
	asyncE *asyncErrors
	once   sync.Once
}

// newHarness starts a server in a fresh directory, provisions the space and starts a Service.
// opts adjust the Config before Start.
func newHarness(t testing.TB, opts ...func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), acl: newACLMap(), asyncE: &asyncErrors{}}
	h.startServer()
	provisionTestSpace(t, h.js)
	h.cfg = Config{Names: testNames, ACL: h.acl, Logger: testLogger(t),
		UnknownMemberRetries: 3, UnknownMemberDelay: 20 * time.Millisecond, RestartBackoff: 20 * time.Millisecond}
	for _, o := range opts {
		o(&h.cfg)
	}
	h.startService()
	t.Cleanup(h.stop)
	return h
}

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

func (h *harness) startServer() {
	h.t.Helper()
	perms := func(g wire.Permissions) *server.Permissions {
		return &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: g.Pub.Allow, Deny: g.Pub.Deny},
			Subscribe: &server.SubjectPermission{Allow: g.Sub.Allow, Deny: g.Sub.Deny},
		}
	}
	opts := &server.Options{
		ServerName: "delivery-test", DontListen: true, JetStream: true, StoreDir: h.dir,
		NoLog: true, NoSigs: true, MaxControlLine: 65536,
		Users: []*server.User{
			{Username: deliveryUser, Password: testUserPassword, Permissions: perms(wire.DeliveryPermissions(testNames, deliveryInbox))},
			{Username: controlUser, Password: testUserPassword, Permissions: perms(wire.DeliveryControlPermissions(testNames))},
			{Username: agentUser, Password: testUserPassword},
		},
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		h.t.Fatalf("new server: %v", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(waitFor) {
		h.t.Fatal("server did not become ready")
	}
	h.srv = srv
	h.nc = h.connect(agentUser, nil)
	h.js, err = jetstream.New(h.nc)
	if err != nil {
		h.t.Fatal(err)
	}
}

// connect opens an in-process connection as user.
func (h *harness) connect(user string, extra []nats.Option) *nats.Conn {
	h.t.Helper()
	opts := append([]nats.Option{nats.InProcessServer(h.srv), nats.UserInfo(user, testUserPassword),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { h.asyncE.add(user, err) })}, extra...)
	nc, err := nats.Connect("", opts...)
	if err != nil {
		h.t.Fatalf("connect as %s: %v", user, err)
	}
	return nc
}

func (h *harness) startService() {
	h.t.Helper()
	h.svcNC = h.connect(deliveryUser, []nats.Option{nats.CustomInboxPrefix(deliveryInbox)})
	h.ctlNC = h.connect(controlUser, nil)
	cfg := h.cfg
	cfg.Conn, cfg.ControlConn = h.svcNC, h.ctlNC
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	svc, err := Start(ctx, cfg)
	if err != nil {
		h.t.Fatalf("start delivery: %v", err)
	}
	h.svc = svc
}

func (h *harness) stopService() {
	h.t.Helper()
	if h.svc == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := h.svc.Close(ctx); err != nil {
		h.t.Errorf("close delivery: %v", err)
	}
	h.svc = nil
	h.svcNC.Close()
	h.ctlNC.Close()
}

// restartMesh stops the Service and the server and starts both again on the same store.
func (h *harness) restartMesh() {
	h.t.Helper()
	h.stopService()
	h.nc.Close()
	h.srv.Shutdown()
	h.srv.WaitForShutdown()
	h.startServer()
	h.startService()
}

// stop closes everything once, then reports asynchronous connection errors.
func (h *harness) stop() { h.once.Do(h.stopOnce) }

func (h *harness) stopOnce() {
	h.stopService()
	h.nc.Close()
	h.srv.Shutdown()
	h.srv.WaitForShutdown()
	if errs := h.asyncE.list(); len(errs) > 0 {
		h.t.Errorf("asynchronous connection errors (a missing grant?): %v", errs)
	}
}

// asyncErrors collects connection errors, notably permission violations of the delivery user.
type asyncErrors struct {
	mu   sync.Mutex
	errs []string
}

func (a *asyncErrors) add(user string, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.errs = append(a.errs, user+": "+err.Error())
}

func (a *asyncErrors) list() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.errs...)
}

// aclMap is a test ACLSource.
type aclMap struct {
	mu sync.Mutex
	m  map[string]wire.ACLRecord
}

func newACLMap() *aclMap { return &aclMap{m: map[string]wire.ACLRecord{}} }

func (a *aclMap) ReadACL(id string) (wire.ACLRecord, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, ok := a.m[id]
	return r, ok
}

func (a *aclMap) set(id string, allow ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	prev := a.m[id]
	a.m[id] = wire.ACLRecord{AllowSubscribe: allow, Revision: prev.Revision + 1, UpdatedAt: time.Now().UnixMilli()}
}

func (a *aclMap) forget(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.m, id)
}

// provisionTestSpace creates the space's streams and buckets from wire's layout, as package
// space provisions them, and writes the durable =defaults record.
func provisionTestSpace(t testing.TB, js jetstream.JetStream) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	n := testNames
	for _, cfg := range jsconfig.Streams(n.Streams(), jetstream.FileStorage) {
		if _, err := js.CreateOrUpdateStream(ctx, cfg); err != nil {
			t.Fatalf("create stream %s: %v", cfg.Name, err)
		}
	}
	reg, err := js.KeyValue(ctx, n.ChannelsBucket())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Put(ctx, wire.DefaultsKey, mustJSON(t, wire.ChannelDefaults{DeliveryClass: wire.DeliveryDurable})); err != nil {
		t.Fatal(err)
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// agent is an instance played over the harness's unrestricted connection.
type agent struct {
	h    *harness
	id   string
	name string
}

// newAgent mints an nkey id for name, gives it a read ACL and pre-creates its dlv_<id>
// consumer, as the provisioner does.
func (h *harness) newAgent(name string, allow ...string) *agent {
	h.t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		h.t.Fatal(err)
	}
	id, err := kp.PublicKey()
	if err != nil {
		h.t.Fatal(err)
	}
	h.acl.set(id, allow...)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	_, err = h.js.CreateOrUpdateConsumer(ctx, testNames.DLVStream(),
		jsconfig.Consumer(testNames.DLVConsumerSpec(id, wire.DefaultAckWait)))
	if err != nil {
		h.t.Fatalf("create dlv consumer: %v", err)
	}
	return &agent{h: h, id: id, name: name}
}

func (a *agent) ref() wire.EndpointRef { return wire.EndpointRef{ID: a.id, Name: a.name} }

// publish sends a channel message through JetStream with Nats-Msg-Id = id (SPEC §8) and
// returns it with its CHAT sequence.
func (a *agent) publish(channel string, mentions ...string) (*wire.CotalMessage, uint64) {
	a.h.t.Helper()
	m := wire.NewChannelMessage(testSpace, a.ref(), channel, wire.Part{Kind: "text", Text: "hi"})
	m.Mentions = mentions
	ack, err := a.h.js.PublishMsg(context.Background(), &nats.Msg{Subject: testNames.ChatSubject(a.id, channel),
		Data: mustJSON(a.h.t, m)}, jetstream.WithMsgID(m.ID))
	if err != nil {
		a.h.t.Fatalf("publish: %v", err)
	}
	return m, ack.Sequence
}

// announce writes the agent's presence row, idle, with heartbeat time ts.
func (a *agent) announce(ts time.Time) { a.announceStatus(ts, wire.StatusIdle) }

// control sends a request on the delivery control service with a reply subject inside the
// request's own subtree and returns the reply.
func (a *agent) control(op string, args any) wire.ControlReply {
	a.h.t.Helper()
	req, err := wire.NewControlRequest(op, args, a.ref())
	if err != nil {
		a.h.t.Fatal(err)
	}
	return a.h.request(testNames.CtlSubject(wire.DeliveryService, a.id), "", mustJSON(a.h.t, req))
}

// request publishes data on subject with a reply subject (default: inside the subject's
// .reply. subtree) and waits for the answer.
func (h *harness) request(subject, reply string, data []byte) wire.ControlReply {
	h.t.Helper()
	if reply == "" {
		reply = wire.ControlReplySubject(subject)
	}
	sub, err := h.nc.SubscribeSync(reply)
	if err != nil {
		h.t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := h.nc.PublishRequest(subject, reply, data); err != nil {
		h.t.Fatal(err)
	}
	m, err := sub.NextMsg(waitFor)
	if err != nil {
		h.t.Fatalf("no reply to %s: %v", subject, err)
	}
	r, err := wire.DecodeControlReply(m.Data)
	if err != nil {
		h.t.Fatal(err)
	}
	return *r
}

// join asks for durable membership and returns the reply data.
func (a *agent) join(channel string) wire.DurableJoinReply {
	a.h.t.Helper()
	var out wire.DurableJoinReply
	a.h.decodeOK(a.control(wire.OpDurableJoin, map[string]any{"channel": channel}), &out)
	return out
}

func (a *agent) leave(channel string, generation uint64) wire.DurableLeaveReply {
	a.h.t.Helper()
	var out wire.DurableLeaveReply
	a.h.decodeOK(a.control(wire.OpDurableLeave, map[string]any{"channel": channel, "generation": generation}), &out)
	return out
}

func (h *harness) decodeOK(r wire.ControlReply, v any) {
	h.t.Helper()
	if !r.OK {
		h.t.Fatalf("control request refused: %s", r.Error)
	}
	if err := json.Unmarshal(r.Data, v); err != nil {
		h.t.Fatal(err)
	}
}

// membership reads the agent's persisted membership record of channel.
func (a *agent) membership(channel string) wire.Membership {
	a.h.t.Helper()
	kv, err := a.h.js.KeyValue(context.Background(), testNames.DurableMembersBucket())
	if err != nil {
		a.h.t.Fatal(err)
	}
	key := wire.MemberKey(channel, a.id)
	e, err := kv.Get(context.Background(), key)
	if err != nil {
		a.h.t.Fatalf("read membership %s: %v", key, err)
	}
	rec, err := wire.DecodeMembership(key, e.Value())
	if err != nil {
		a.h.t.Fatal(err)
	}
	return *rec
}

// settle waits until the fan-out and the reader have consumed and acknowledged everything.
func (h *harness) settle() {
	h.t.Helper()
	await.Check(h.t, waitFor, pollEvery, func() error {
		for _, c := range []struct{ stream, name string }{
			{testNames.ChatStream(), wire.FanoutConsumer},
			{testNames.InboxStream(), wire.ReaderConsumer},
		} {
			last, err := h.lastSeq(c.stream)
			if err != nil {
				return err
			}
			info, err := h.consumerInfo(c.stream, c.name)
			if err != nil {
				return err
			}
			// num_pending lags a PubAck (the stream signals its consumers asynchronously), so
			// the consumer must also have been delivered the stream's last message.
			if info.NumPending != 0 || info.NumAckPending != 0 || info.Delivered.Stream < last {
				return fmt.Errorf("%s: %d pending, %d unacknowledged, delivered up to %d of %d",
					c.name, info.NumPending, info.NumAckPending, info.Delivered.Stream, last)
			}
		}
		return nil
	})
}

// lastSeq is the sequence of the last message stored in stream.
func (h *harness) lastSeq(stream string) (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	st, err := h.js.Stream(ctx, stream)
	if err != nil {
		return 0, err
	}
	return st.CachedInfo().State.LastSeq, nil
}

func (h *harness) consumerInfo(stream, name string) (*jetstream.ConsumerInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	c, err := h.js.Consumer(ctx, stream, name)
	if err != nil {
		return nil, err
	}
	return c.Info(ctx)
}

// received reads every copy waiting on the agent's dlv_<id> consumer, acking each, once the
// pipeline has settled; the result is exact, duplicates included. The consumer learns of a
// stored copy asynchronously after its PubAck, so its num_pending can lag the stream: it reads
// until the last copy stored on the agent's DLV subject has been delivered.
func (a *agent) received() []string {
	a.h.t.Helper()
	a.h.settle()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	last := a.lastStored(ctx)
	cons, err := a.h.js.Consumer(ctx, testNames.DLVStream(), testNames.DLVConsumer(a.id))
	if err != nil {
		a.h.t.Fatal(err)
	}
	var ids []string
	await.Check(a.h.t, waitFor, pollEvery, func() error {
		info, err := cons.Info(ctx)
		if err != nil {
			return err
		}
		if info.Delivered.Stream >= last {
			return nil
		}
		if info.NumPending > 0 {
			ids = append(ids, a.fetch(cons, int(info.NumPending))...)
		}
		return fmt.Errorf("dlv consumer of %s delivered up to %d of %d when last asked", a.name, info.Delivered.Stream, last)
	})
	return ids
}

// lastStored is the stream sequence of the last copy stored on the agent's DLV subject, 0 if
// none.
func (a *agent) lastStored(ctx context.Context) uint64 {
	st, err := a.h.js.Stream(ctx, testNames.DLVStream())
	if err != nil {
		a.h.t.Fatal(err)
	}
	m, err := st.GetLastMsgForSubject(ctx, testNames.DLVSubject(a.id))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0
	}
	if err != nil {
		a.h.t.Fatal(err)
	}
	return m.Sequence
}

// fetch reads and acks n copies from cons and returns their message ids.
func (a *agent) fetch(cons jetstream.Consumer, n int) []string {
	batch, err := cons.Fetch(n, jetstream.FetchMaxWait(waitFor))
	if err != nil {
		a.h.t.Fatal(err)
	}
	var ids []string
	for m := range batch.Messages() {
		got, err := wire.DecodeMessage(m.Data())
		if err != nil {
			a.h.t.Fatalf("DLV copy is not a CotalMessage: %v", err)
		}
		ids = append(ids, got.ID)
		_ = m.Ack()
	}
	if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
		a.h.t.Fatal(err)
	}
	return ids
}

// ids returns the ids of msgs.
func ids(msgs ...*wire.CotalMessage) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}

// setChannel writes a channel's registry entry, as a privileged operator would.
func (h *harness) setChannel(channel string, cfg wire.ChannelConfig) {
	h.t.Helper()
	kv, err := h.js.KeyValue(context.Background(), testNames.ChannelsBucket())
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := kv.Put(context.Background(), channel, mustJSON(h.t, cfg)); err != nil {
		h.t.Fatal(err)
	}
}

// classIs reports whether the Service already resolves channel to want.
func (h *harness) classIs(channel string, want wire.DeliveryClass) error {
	if got := classOf(h.svc.channels, channel); got != want {
		return fmt.Errorf("class of %s is %s, want %s", channel, got, want)
	}
	return nil
}

// fannedOut is a condition: at least n durable entries were written.
func (h *harness) fannedOut(n int64) func() error {
	return func() error {
		if got := h.svc.Stats().FannedOutDurable; got < n {
			return fmt.Errorf("%d durable entries fanned out, want %d", got, n)
		}
		return nil
	}
}

// waitPresence waits until the Service's presence view holds every agent's latest row.
func (h *harness) waitPresence(agents ...*agent) {
	h.t.Helper()
	await.Check(h.t, waitFor, pollEvery, func() error {
		for _, a := range agents {
			if _, ok := h.svc.presence.get(a.id); !ok {
				return fmt.Errorf("no presence row for %s yet", a.name)
			}
		}
		return nil
	})
}

// announceStatus writes a presence row with an explicit status.
func (a *agent) announceStatus(ts time.Time, status wire.PresenceStatus) {
	a.h.t.Helper()
	kv, err := a.h.js.KeyValue(context.Background(), testNames.PresenceBucket())
	if err != nil {
		a.h.t.Fatal(err)
	}
	p := wire.Presence{Card: wire.AgentCard{ID: a.id, Name: a.name, Kind: wire.CardKindAgent},
		Status: status, TS: ts.UnixMilli()}
	if _, err := kv.Put(context.Background(), a.id, mustJSON(a.h.t, p)); err != nil {
		a.h.t.Fatal(err)
	}
}
