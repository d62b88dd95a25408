package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/wire"
)

const (
	titleDM      = "2. DM"
	titleAnycast = "3. Anycast"
	// anycastWorkers is how many endpoints share the anycast role.
	anycastWorkers = 4
)

var (
	figDMRate      = figure{key: "rate", metric: "surfaced+acked msgs/s", unit: "msgs/s", target: atLeastJSON(1)}
	figAnycastRate = figure{key: "rate", metric: "surfaced+acked msgs/s", unit: "msgs/s", target: atLeastJSON(1)}
)

func dmCases(c Config) []Case {
	var out []Case
	for _, size := range c.Payloads {
		out = append(out, Case{Name: sizeName(size), run: func(ctx context.Context, s *suite) ([]Row, error) {
			return s.queueCase(ctx, envOptions{}, titleDM, sizeName(size), size, 1, s.cfg.Messages)
		}})
	}
	return out
}

func anycastCases(c Config) []Case {
	var out []Case
	for _, size := range c.Payloads {
		name := fmt.Sprintf("%s, 1→%d workers", sizeName(size), anycastWorkers)
		out = append(out, Case{Name: name, run: func(ctx context.Context, s *suite) ([]Row, error) {
			return s.queueCase(ctx, envOptions{}, titleAnycast, name, size, anycastWorkers, s.cfg.Messages)
		}})
	}
	return out
}

// queueCase measures unicast (one receiver: a DM to its dm_<id>) or anycast (several
// workers sharing svc_<role>) against raw JetStream with a pull consumer and explicit acks:
// a limits stream like DM, or a work-queue stream like TASK shared by the workers (SPEC §4,
// §8).
func (s *suite) queueCase(ctx context.Context, o envOptions, title, caseName string, size, workers, msgs int) ([]Row, error) {
	env, err := newEnv(ctx, o)
	if err != nil {
		return nil, err
	}
	defer env.close()
	q := queue{s: s, env: env, text: payload(size), workers: workers, msgs: msgs}
	if err := env.rawStream(ctx, "RAWQ", "raw.q.>", func(c *jetstream.StreamConfig) {
		if workers > 1 {
			c.Retention = jetstream.WorkQueuePolicy
		}
	}); err != nil {
		return nil, err
	}
	fig := figDMRate
	m := wire.NewDirectMessage(benchSpace, rawSender, rawSender.ID, wire.TextPart(q.text))
	if workers > 1 {
		fig = figAnycastRate
		m = wire.NewServiceMessage(benchSpace, rawSender, "worker", wire.TextPart(q.text))
	}
	envelope, err := jsonBody(m)
	if err != nil {
		return nil, err
	}
	return s.compare(ctx, title, caseName, []figure{fig, figCPU, figP50, figP99},
		[3]side{q.cotal, q.raw(bareBody(q.text)), q.raw(envelope)})
}

// queue is one DM or anycast case.
type queue struct {
	s       *suite
	env     *env
	text    string
	workers int
	msgs    int
}

func (q queue) cotal(ctx context.Context, run int) (figures, error) {
	var got tally
	pr := newProbe(1)
	h := func(context.Context, endpoint.Delivery) error { got.add(); pr.hit(); return nil }
	role := ""
	if q.workers > 1 {
		role = fmt.Sprintf("worker-r%d", run)
	}
	var eps []*endpoint.Endpoint
	defer func() { closeAll(eps) }()
	for i := range q.workers {
		ep, err := q.env.agent(ctx, fmt.Sprintf("recv%d", i), role, h)
		if err != nil {
			return nil, err
		}
		eps = append(eps, ep)
	}
	sender, err := q.env.agent(ctx, "sender", "", nil)
	if err != nil {
		return nil, err
	}
	eps = append(eps, sender)
	n := q.env.names
	stream, consumer := n.DMStream(), n.DMConsumer(eps[0].ID())
	parts := []wire.Part{wire.TextPart(q.text)}
	send := func(ctx context.Context) error { _, err := sender.SendDM(ctx, eps[0].ID(), parts); return err }
	sendAsync := func() (*endpoint.PendingReceipt, error) { return sender.SendDMAsync(eps[0].ID(), parts) }
	if role != "" {
		stream, consumer = n.TaskStream(), n.SvcConsumer(role)
		send = func(ctx context.Context) error { _, err := sender.SendAnycast(ctx, role, parts); return err }
		sendAsync = func() (*endpoint.PendingReceipt, error) { return sender.SendAnycastAsync(role, parts) }
	}
	return q.measure(ctx, &got, pr, stream, consumer, send,
		func(ctx context.Context) error {
			pending := make([]*endpoint.PendingReceipt, 0, q.msgs)
			for range q.msgs {
				p, err := sendAsync()
				if err != nil {
					return err
				}
				pending = append(pending, p)
			}
			return waitReceipts(ctx, pending)
		})
}

// raw is the raw side carrying body.
func (q queue) raw(body rawBody) side {
	return func(ctx context.Context, run int) (figures, error) { return q.rawRun(ctx, body, run) }
}

func (q queue) rawRun(ctx context.Context, body rawBody, run int) (figures, error) {
	var got tally
	pr := newProbe(1)
	subject, consumer := fmt.Sprintf("raw.q.%s%d", body.tag, run), fmt.Sprintf("rawq-%s%d", body.tag, run)
	if err := q.env.rawConsumer(ctx, "RAWQ", consumer, subject); err != nil {
		return nil, err
	}
	for range q.workers {
		nc, js, err := q.env.conn()
		if err != nil {
			return nil, err
		}
		defer nc.Close()
		cons, err := js.Consumer(ctx, "RAWQ", consumer)
		if err != nil {
			return nil, err
		}
		cc, err := cons.Consume(func(m jetstream.Msg) { body.receive(m.Data()); got.add(); pr.hit(); _ = m.Ack() })
		if err != nil {
			return nil, err
		}
		defer cc.Stop()
	}
	nc, js, err := q.env.conn()
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	data := body.data
	return q.measure(ctx, &got, pr, "RAWQ", consumer,
		func(ctx context.Context) error { _, err := js.Publish(ctx, subject, data); return err },
		func(ctx context.Context) error { return publishRaw(ctx, js, subject, data, q.msgs) })
}

// measure runs the latency rounds with one message in flight, then the throughput run, whose
// clock stops when every message was surfaced and the consumer holds nothing unacked.
func (q queue) measure(ctx context.Context, got *tally, pr *probe, stream, consumer string,
	sendOne, sendAll func(context.Context) error) (figures, error) {
	lat, err := pr.rounds(ctx, q.s.cfg.LatencyRounds, 1, sendOne)
	if err != nil {
		return nil, err
	}
	base := got.count()
	start, cpu := time.Now(), startCPU()
	if err := sendAll(ctx); err != nil {
		return nil, err
	}
	if err := got.waitCount(ctx, base+int64(q.msgs)); err != nil {
		return nil, err
	}
	if err := await(ctx, consumer+" drained", got.count, func() (bool, error) {
		return q.env.drained(ctx, stream, consumer)
	}); err != nil {
		return nil, err
	}
	f := figures{"rate": rate(int64(q.msgs), time.Since(start))}
	cpu.perMessage(f, int64(q.msgs))
	latencyFigures(f, lat)
	return f, nil
}
