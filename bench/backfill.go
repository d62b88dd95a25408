package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/wire"
)

const titleBackfill = "5. Join with backfill"

var (
	figBackfillRate = figure{key: "rate", metric: "replayed msgs/s", unit: "msgs/s", target: atLeastJSON(1)}
	figBackfillTime = figure{key: "time", metric: "time to surface all", unit: "ms"}
)

func backfillCases(c Config) []Case {
	var out []Case
	for _, size := range c.Payloads {
		name := fmt.Sprintf("%s, %d retained", sizeName(size), c.Backfill)
		out = append(out, Case{Name: name, run: func(ctx context.Context, s *suite) ([]Row, error) {
			return s.backfill(ctx, name, size)
		}})
	}
	return out
}

// backfill: a channel holds Backfill retained messages from enough senders to stay within
// CHAT's 1000 per sender+channel subject; a new endpoint joins and the clock runs until Join
// has surfaced every one with Historical set (SPEC §7 steps 1–5, through the pinned
// chathist_<id> consumer). Raw replays the same number from a stream like CHAT with an
// ordered consumer. Each run replays the same history with a fresh joiner.
func (s *suite) backfill(ctx context.Context, caseName string, size int) ([]Row, error) {
	env, err := newEnv(ctx, envOptions{})
	if err != nil {
		return nil, err
	}
	defer env.close()
	text, total := payload(size), s.cfg.Backfill
	senders := (total + perSubject - 1) / perSubject
	const channel = "history"
	if err := env.setClass(ctx, channel, wire.DeliveryLive); err != nil {
		return nil, err
	}
	if err := prefillCotal(ctx, env, channel, text, total, senders); err != nil {
		return nil, err
	}
	if err := env.rawStream(ctx, "RAWHIST", "raw.hist.>", func(c *jetstream.StreamConfig) {
		c.MaxMsgsPerSubject = perSubject
	}); err != nil {
		return nil, err
	}
	envelope, err := jsonBody(wire.NewChannelMessage(benchSpace, rawSender, channel, wire.TextPart(text)))
	if err != nil {
		return nil, err
	}
	for _, body := range []rawBody{bareBody(text), envelope} {
		if err := prefillRaw(ctx, env, body, total, senders); err != nil {
			return nil, err
		}
	}
	cotal := func(ctx context.Context, run int) (figures, error) {
		var got tally
		h := func(_ context.Context, d endpoint.Delivery) error {
			if d.Meta.Historical {
				got.add()
			}
			return nil
		}
		joiner, err := env.agent(ctx, fmt.Sprintf("joiner%d", run), "", h)
		if err != nil {
			return nil, err
		}
		defer closeAll([]*endpoint.Endpoint{joiner})
		start, cpu := time.Now(), startCPU()
		res, err := joiner.Join(ctx, channel)
		if err != nil {
			return nil, err
		}
		took := time.Since(start)
		if res.Backfilled != total || res.BackfillErr != nil {
			return nil, fmt.Errorf("join backfilled %d of %d: %v", res.Backfilled, total, res.BackfillErr)
		}
		f := figures{"rate": rate(got.count(), took), "time": float64(took) / float64(time.Millisecond)}
		cpu.perMessage(f, got.count())
		return f, nil
	}
	raw := func(body rawBody) side {
		return func(ctx context.Context, _ int) (figures, error) { return replayRaw(ctx, env, body, total) }
	}
	return s.compare(ctx, titleBackfill, caseName, []figure{figBackfillRate, figBackfillTime, figCPU},
		[3]side{cotal, raw(bareBody(text)), raw(envelope)})
}

// replayRaw replays the total messages prefillRaw stored for body with an ordered consumer.
func replayRaw(ctx context.Context, env *env, body rawBody, total int) (figures, error) {
	var got tally
	nc, js, err := env.conn()
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	start, cpu := time.Now(), startCPU()
	oc, err := js.OrderedConsumer(ctx, "RAWHIST", jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{"raw.hist.*." + body.tag},
	})
	if err != nil {
		return nil, err
	}
	cc, err := oc.Consume(func(m jetstream.Msg) { body.receive(m.Data()); got.add() })
	if err != nil {
		return nil, err
	}
	defer cc.Stop()
	if err := got.waitCount(ctx, int64(total)); err != nil {
		return nil, err
	}
	took := got.lastAt().Sub(start)
	f := figures{"rate": rate(int64(total), took), "time": float64(took) / float64(time.Millisecond)}
	cpu.perMessage(f, int64(total))
	return f, nil
}

// prefillCotal publishes total messages on channel, spread over senders endpoints.
func prefillCotal(ctx context.Context, env *env, channel, text string, total, senders int) error {
	for i := range senders {
		ep, err := env.agent(ctx, fmt.Sprintf("sender%d", i), "", nil)
		if err != nil {
			return err
		}
		n := min(perSubject, total-i*perSubject)
		err = publishChannel(ctx, ep, channel, text, n)
		closeAll([]*endpoint.Endpoint{ep})
		if err != nil {
			return err
		}
	}
	return nil
}

// prefillRaw publishes total messages of body on raw.hist.<sender>.<tag>, spread over senders.
func prefillRaw(ctx context.Context, env *env, body rawBody, total, senders int) error {
	for i := range senders {
		n := min(perSubject, total-i*perSubject)
		if err := publishRaw(ctx, env.js, fmt.Sprintf("raw.hist.s%d.%s", i, body.tag), body.data, n); err != nil {
			return err
		}
	}
	return nil
}
