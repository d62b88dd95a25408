package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/wire"
)

const titleMulticast = "1. Live multicast"

var figMulticastRate = figure{key: "rate", metric: "delivered msgs/s", unit: "msgs/s", target: atLeastJSON(1)}

func multicastCases(c Config) []Case {
	var out []Case
	for _, size := range c.Payloads {
		for _, subs := range []int{1, 10} {
			out = append(out, Case{
				Name: fmt.Sprintf("%s, 1→%d", sizeName(size), subs),
				run: func(ctx context.Context, s *suite) ([]Row, error) {
					return s.multicast(ctx, size, subs)
				},
			})
		}
	}
	return out
}

// multicast: one publisher, subs subscribers on a live channel (SPEC §4). cotal publishes
// with Send/SendAsync and its subscribers surface through their Handler; raw publishes
// through JetStream to a stream like CHAT and its subscribers are core subscriptions.
func (s *suite) multicast(ctx context.Context, size, subs int) ([]Row, error) {
	env, err := newEnv(ctx, envOptions{})
	if err != nil {
		return nil, err
	}
	defer env.close()
	if err := env.rawStream(ctx, "RAWCHAT", "raw.chat.>", func(c *jetstream.StreamConfig) {
		c.MaxMsgsPerSubject = perSubject
	}); err != nil {
		return nil, err
	}
	text := payload(size)
	envelope, err := jsonBody(wire.NewChannelMessage(benchSpace, rawSender, "live", wire.TextPart(text)))
	if err != nil {
		return nil, err
	}
	cotal := func(ctx context.Context, run int) (figures, error) {
		return s.multicastCotal(ctx, env, text, subs, run)
	}
	raw := func(body rawBody) side {
		return func(ctx context.Context, run int) (figures, error) {
			return s.multicastRaw(ctx, env, body, subs, run)
		}
	}
	return s.compare(ctx, titleMulticast, fmt.Sprintf("%s, 1→%d", sizeName(size), subs),
		[]figure{figMulticastRate, figCPU, figP50, figP99}, [3]side{cotal, raw(bareBody(text)), raw(envelope)})
}

func (s *suite) multicastCotal(ctx context.Context, env *env, text string, subs, run int) (figures, error) {
	channel := fmt.Sprintf("live.r%d", run)
	if err := env.setClass(ctx, channel, wire.DeliveryLive); err != nil {
		return nil, err
	}
	var got tally
	pr := newProbe(subs)
	h := func(context.Context, endpoint.Delivery) error { got.add(); pr.hit(); return nil }
	var eps []*endpoint.Endpoint
	defer func() { closeAll(eps) }()
	for i := range subs {
		ep, err := env.agent(ctx, fmt.Sprintf("sub%d", i), "", h)
		if err != nil {
			return nil, err
		}
		eps = append(eps, ep)
		if _, err := ep.Join(ctx, channel); err != nil {
			return nil, err
		}
	}
	pub, err := env.agent(ctx, "pub", "", nil)
	if err != nil {
		return nil, err
	}
	eps = append(eps, pub)
	parts := []wire.Part{wire.TextPart(text)}
	return s.measureMulticast(ctx, &got, pr, subs,
		func(ctx context.Context) error {
			_, err := pub.Send(ctx, channel, parts)
			return err
		},
		func(ctx context.Context) error { return publishChannel(ctx, pub, channel, text, s.cfg.Messages) })
}

func (s *suite) multicastRaw(ctx context.Context, env *env, body rawBody, subs, run int) (figures, error) {
	subject := fmt.Sprintf("raw.chat.pub.%s%d", body.tag, run)
	var got tally
	pr := newProbe(subs)
	for range subs {
		nc, _, err := env.conn()
		if err != nil {
			return nil, err
		}
		defer nc.Close()
		if _, err := nc.Subscribe(subject, func(m *nats.Msg) { body.receive(m.Data); got.add(); pr.hit() }); err != nil {
			return nil, err
		}
		if err := nc.FlushWithContext(ctx); err != nil {
			return nil, err
		}
	}
	nc, js, err := env.conn()
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	return s.measureMulticast(ctx, &got, pr, subs,
		func(ctx context.Context) error {
			_, err := js.Publish(ctx, subject, body.data)
			return err
		},
		func(ctx context.Context) error { return publishRaw(ctx, js, subject, body.data, s.cfg.Messages) })
}

// measureMulticast runs the one-in-flight latency rounds with send, then the throughput run
// with publishAll, and returns both sides' figures measured the same way: every subscriber
// must count each of the cfg.Messages before the rate is taken.
func (s *suite) measureMulticast(ctx context.Context, got *tally, pr *probe, subs int,
	send, publishAll func(context.Context) error) (figures, error) {
	lat, err := pr.rounds(ctx, s.cfg.LatencyRounds, subs, send)
	if err != nil {
		return nil, err
	}
	base := got.count()
	start, cpu := time.Now(), startCPU()
	if err := publishAll(ctx); err != nil {
		return nil, err
	}
	want := int64(s.cfg.Messages * subs)
	if err := got.waitCount(ctx, base+want); err != nil {
		return nil, err
	}
	f := figures{figMulticastRate.key: rate(want, got.lastAt().Sub(start))}
	cpu.perMessage(f, want)
	latencyFigures(f, lat)
	return f, nil
}
