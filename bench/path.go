package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/procstat"
	"github.com/cotal-go/cotal/wire"
)

const titlePath = "12. The user's path"

// Remote is a mesh running in a process of its own, reached the way agents reach one: over
// TCP, with credentials it mints. Config.Remote starts one.
type Remote interface {
	// Link is the join link of the space the bench runs in.
	Link() string
	// Mint mints an agent credential named name, with role (none when empty) and channels
	// granted for both subscribe and publish, and returns its .creds content and identity.
	Mint(ctx context.Context, name, role string, channels []string) (creds []byte, id string, err error)
	// SetLive makes channel a live channel (SPEC §7), creating its registry entry.
	SetLive(ctx context.Context, channel string) error
	// Drained reports whether the DM consumer of identity id (with anycast, the consumer of
	// its role) has nothing pending and nothing unacknowledged.
	Drained(ctx context.Context, id string, anycast bool) (bool, error)
	// PID is the mesh's process, whose CPU time the rows report; 0 when unknown.
	PID() int
	// Close stops the mesh and removes what it wrote.
	Close() error
}

// RemoteOptions choose how a Remote mesh runs.
type RemoteOptions struct {
	// Sync is its JetStream durability: "always" or "interval".
	Sync string
}

// pathSyncs are the durability modes the path rows run with, and their rate targets.
var pathSyncs = []struct {
	sync   string
	target float64
}{{"always", 0.95}, {"interval", 0.8}}

var (
	figPathRate    = figure{key: "rate", metric: "delivered msgs/s", unit: "msgs/s"}
	figPathMeshCPU = figure{key: "mesh_cpu", metric: "mesh process CPU per message", unit: "µs"}
	figPathCPU     = figure{key: "cpu", metric: "client CPU per message", unit: "µs",
		target: &Target{Goal: AtMost, Value: 1.2, VsJSON: true}}
)

// pathNote says what the row's sides are.
const pathNote = "cotal up in its own process, file storage; both sides over TCP with credentials it minted"

// pathCases are multicast, DM and anycast at the smallest payload through a Remote mesh, once
// per durability mode, and the sustained DM case; none without Config.Remote.
func pathCases(c Config) []Case {
	if c.Remote == nil {
		return nil
	}
	size := slices.Min(c.Payloads)
	var out []Case
	for _, sy := range pathSyncs {
		for _, k := range []pathKind{pathMulticast, pathDM, pathAnycast} {
			name := fmt.Sprintf("%s, %s, sync %s", k, sizeName(size), sy.sync)
			out = append(out, Case{Name: name, run: func(ctx context.Context, s *suite) ([]Row, error) {
				return s.pathCase(ctx, name, k, sy.sync, sy.target, size)
			}})
		}
	}
	return append(out, burstCase(c, size))
}

// pathKind is the messaging mode of a path case.
type pathKind string

const (
	pathMulticast pathKind = "multicast 1→1"
	pathDM        pathKind = "DM"
	pathAnycast   pathKind = "anycast 1→4"
)

func (s *suite) pathCase(ctx context.Context, name string, k pathKind, sync string, target float64, size int) ([]Row, error) {
	r, err := s.cfg.Remote(ctx, RemoteOptions{Sync: sync})
	if err != nil {
		return nil, fmt.Errorf("start the mesh: %w", err)
	}
	defer r.Close()
	p := &path{s: s, r: r, kind: k, text: payload(size), names: wire.NewNames(benchSpace)}
	var m *wire.CotalMessage
	switch k {
	case pathMulticast:
		m = wire.NewChannelMessage(benchSpace, rawSender, "live", wire.TextPart(p.text))
	case pathDM:
		m = wire.NewDirectMessage(benchSpace, rawSender, rawSender.ID, wire.TextPart(p.text))
	default:
		m = wire.NewServiceMessage(benchSpace, rawSender, "worker", wire.TextPart(p.text))
	}
	envelope, err := jsonBody(m)
	if err != nil {
		return nil, err
	}
	rate := figPathRate
	rate.target = atLeast(target)
	rows, err := s.compare(ctx, titlePath, name, []figure{rate, figPathCPU, figPathMeshCPU, figP50},
		[3]side{p.cotal, p.raw(bareBody(p.text)), p.raw(envelope)})
	for i := range rows {
		rows[i].Note = pathNote
	}
	return rows, err
}

// path is one path case on its Remote mesh.
type path struct {
	s     *suite
	r     Remote
	kind  pathKind
	text  string
	names wire.Names
	// seq keeps every run's names, roles and channels apart.
	seq atomic.Int64
}

// receivers is how many agents receive each message, and workers how many share it.
func (p *path) receivers() (receivers, workers int) {
	if p.kind == pathAnycast {
		return 1, anycastWorkers
	}
	return 1, 1
}

// grants are the role and channel a run's credentials get.
func (p *path) grants(tag string) (role, channel string) {
	n := p.seq.Add(1)
	switch p.kind {
	case pathAnycast:
		return fmt.Sprintf("worker%s%d", tag, n), ""
	case pathMulticast:
		return "", fmt.Sprintf("path.%s%d", tag, n)
	}
	return "", ""
}

// agent is one minted credential.
type agent struct {
	creds []byte
	id    string
}

func (p *path) mint(ctx context.Context, name, role, channel string) (agent, error) {
	var chans []string
	if channel != "" {
		chans = []string{channel}
	}
	creds, id, err := p.r.Mint(ctx, fmt.Sprintf("%s-%d", name, p.seq.Add(1)), role, chans)
	return agent{creds, id}, err
}

// cast mints the run's receivers (workers of role, or one) and its sender, and makes channel
// live.
func (p *path) cast(ctx context.Context, role, channel string) (recv []agent, sender agent, err error) {
	if channel != "" {
		if err := p.r.SetLive(ctx, channel); err != nil {
			return nil, agent{}, err
		}
	}
	_, workers := p.receivers()
	for i := range workers {
		a, err := p.mint(ctx, fmt.Sprint("recv", i), role, channel)
		if err != nil {
			return nil, agent{}, err
		}
		recv = append(recv, a)
	}
	sender, err = p.mint(ctx, "sender", "", channel)
	return recv, sender, err
}

func (p *path) cotal(ctx context.Context, _ int) (figures, error) {
	role, channel := p.grants("c")
	recv, sender, err := p.cast(ctx, role, channel)
	if err != nil {
		return nil, err
	}
	var got tally
	pr := newProbe(1)
	h := func(context.Context, endpoint.Delivery) error { got.add(); pr.hit(); return nil }
	var eps []*endpoint.Endpoint
	defer func() { closeAll(eps) }()
	for i, a := range recv {
		ep, err := endpoint.Connect(ctx, endpoint.Options{Link: p.r.Link(), Creds: a.creds, Name: fmt.Sprint("recv", i), Role: role, Handler: h})
		if err != nil {
			return nil, err
		}
		eps = append(eps, ep)
		if channel != "" {
			if _, err := ep.Join(ctx, channel); err != nil {
				return nil, err
			}
		}
	}
	pub, err := endpoint.Connect(ctx, endpoint.Options{Link: p.r.Link(), Creds: sender.creds, Name: "sender"})
	if err != nil {
		return nil, err
	}
	eps = append(eps, pub)
	parts := []wire.Part{wire.TextPart(p.text)}
	var send func(context.Context) error
	var sendAsync func() (*endpoint.PendingReceipt, error)
	switch p.kind {
	case pathMulticast:
		send = func(ctx context.Context) error { _, err := pub.Send(ctx, channel, parts); return err }
		sendAsync = func() (*endpoint.PendingReceipt, error) { return pub.SendAsync(channel, parts) }
	case pathDM:
		send = func(ctx context.Context) error { _, err := pub.SendDM(ctx, recv[0].id, parts); return err }
		sendAsync = func() (*endpoint.PendingReceipt, error) { return pub.SendDMAsync(recv[0].id, parts) }
	default:
		send = func(ctx context.Context) error { _, err := pub.SendAnycast(ctx, role, parts); return err }
		sendAsync = func() (*endpoint.PendingReceipt, error) { return pub.SendAnycastAsync(role, parts) }
	}
	return p.measure(ctx, &got, pr, recv[0].id, send, func(ctx context.Context) error {
		return windowed(ctx, p.messages(), sendAsync, func(ctx context.Context, r *endpoint.PendingReceipt) error {
			_, err := r.Wait(ctx)
			return err
		})
	})
}

const (
	// pathScale is how many times Config.Messages a path throughput run sends: a run of the
	// default 2 000 lasts tens of milliseconds on this path, too short for steady CPU figures.
	pathScale = 5
	// pathWindow is how many sends of a path throughput run may await their acknowledgement,
	// well inside nats.go's and the Endpoint's default bound of 4 000, which a run paced by
	// fsync would otherwise reach.
	pathWindow = 1000
)

// messages is how many messages one throughput run of p sends.
func (p *path) messages() int { return pathScale * p.s.cfg.Messages }

// windowed sends n messages with send, at most pathWindow of them awaiting their
// acknowledgement: past that it waits for the oldest first. It then waits for the rest.
func windowed[T any](ctx context.Context, n int, send func() (T, error), wait func(context.Context, T) error) error {
	pending := make([]T, 0, n)
	for i := range n {
		if i >= pathWindow {
			if err := wait(ctx, pending[i-pathWindow]); err != nil {
				return err
			}
		}
		t, err := send()
		if err != nil {
			return err
		}
		pending = append(pending, t)
	}
	for _, t := range pending[max(0, n-pathWindow):] {
		if err := wait(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// raw is the raw side carrying body: nats.go with the same kind of credentials on the same
// streams and consumers, publishing body where cotal publishes its envelope.
func (p *path) raw(body rawBody) side {
	return func(ctx context.Context, _ int) (figures, error) { return p.rawRun(ctx, body) }
}

func (p *path) rawRun(ctx context.Context, body rawBody) (figures, error) {
	role, channel := p.grants(body.tag)
	recv, sender, err := p.cast(ctx, role, channel)
	if err != nil {
		return nil, err
	}
	var got tally
	pr := newProbe(1)
	var conns []*nats.Conn
	defer func() {
		for _, nc := range conns {
			nc.Close()
		}
	}()
	for _, a := range recv {
		nc, js, err := p.dial(a)
		if err != nil {
			return nil, err
		}
		conns = append(conns, nc)
		if err := p.rawReceive(ctx, nc, js, a, role, channel, func(data []byte) { body.receive(data); got.add(); pr.hit() }); err != nil {
			return nil, err
		}
	}
	nc, js, err := p.dial(sender)
	if err != nil {
		return nil, err
	}
	conns = append(conns, nc)
	subject := p.names.InstSubject(recv[0].id, sender.id)
	switch p.kind {
	case pathMulticast:
		subject = p.names.ChatSubject(sender.id, channel)
	case pathAnycast:
		subject = p.names.SvcSubject(role, sender.id)
	}
	return p.measure(ctx, &got, pr, recv[0].id,
		func(ctx context.Context) error { _, err := js.Publish(ctx, subject, body.data); return err },
		func(ctx context.Context) error {
			return windowed(ctx, p.messages(), func() (jetstream.PubAckFuture, error) {
				return js.PublishAsync(subject, body.data)
			}, waitFuture)
		})
}

// rawReceive has a's connection receive what the case sends: a core subscription to the
// channel's live copies, or a consumer of its dm_ or of role's svc_ acking each copy.
func (p *path) rawReceive(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, a agent, role, channel string, got func([]byte)) error {
	if p.kind == pathMulticast {
		if _, err := nc.Subscribe(p.names.ChatFilter(channel), func(m *nats.Msg) { got(m.Data) }); err != nil {
			return err
		}
		return nc.FlushWithContext(ctx)
	}
	stream, consumer := p.names.DMStream(), p.names.DMConsumer(a.id)
	if p.kind == pathAnycast {
		stream, consumer = p.names.TaskStream(), p.names.SvcConsumer(role)
	}
	cons, err := js.Consumer(ctx, stream, consumer)
	if err != nil {
		return fmt.Errorf("bind %s: %w", consumer, err)
	}
	_, err = cons.Consume(func(m jetstream.Msg) { got(m.Data()); _ = m.Ack() })
	return err
}

// dial connects a's credential over TCP the way nats.go alone would, with the inbox prefix
// the agent's grants allow (SPEC Appendix B).
func (p *path) dial(a agent) (*nats.Conn, jetstream.JetStream, error) {
	l, err := wire.ParseLink(p.r.Link())
	if err != nil {
		return nil, nil, err
	}
	userJWT, err := jwt.ParseDecoratedJWT(a.creds)
	if err != nil {
		return nil, nil, err
	}
	kp, err := nkeys.ParseDecoratedNKey(a.creds)
	if err != nil {
		return nil, nil, err
	}
	seed, err := kp.Seed()
	if err != nil {
		return nil, nil, err
	}
	opts := append(endpoint.LinkOptions(l), nats.UserJWTAndSeed(userJWT, string(seed)),
		nats.CustomInboxPrefix(wire.InboxPrefix(a.id)), nats.Name("bench-raw"))
	nc, err := nats.Connect(l.ServerURL(), opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("raw connection: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

// measure runs the latency rounds, then the throughput run, whose clock stops when every
// message was surfaced and, but for multicast, first's consumer holds nothing unacked. It
// reports the CPU per message of this process (the clients) and of the mesh's.
func (p *path) measure(ctx context.Context, got *tally, pr *probe, first string, sendOne, sendAll func(context.Context) error) (figures, error) {
	lat, err := pr.rounds(ctx, p.s.cfg.LatencyRounds, 1, sendOne)
	if err != nil {
		return nil, err
	}
	msgs := int64(p.messages())
	base := got.count()
	mesh0, meshOK := procstat.Read(p.r.PID())
	start, cpu := time.Now(), startCPU()
	if err := sendAll(ctx); err != nil {
		return nil, err
	}
	if err := got.waitCount(ctx, base+msgs); err != nil {
		return nil, err
	}
	end := got.lastAt()
	if p.kind != pathMulticast {
		if err := await(ctx, "the consumer drained", got.count, func() (bool, error) {
			return p.r.Drained(ctx, first, p.kind == pathAnycast)
		}); err != nil {
			return nil, err
		}
		end = time.Now()
	}
	f := figures{"rate": rate(msgs, end.Sub(start))}
	cpu.perMessage(f, msgs)
	if mesh1, ok := procstat.Read(p.r.PID()); ok && meshOK {
		f[figPathMeshCPU.key] = micros(mesh1.CPU-mesh0.CPU) / float64(msgs)
	}
	latencyFigures(f, lat)
	return f, nil
}

// errNoRemote is returned for the path workload without Config.Remote.
var errNoRemote = errors.New("the path workload needs Config.Remote, a mesh in a process of its own (cotal bench provides one)")
