package bench

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/delivery"
	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/wire"
)

const (
	titleDurable = "4. Durable channel"
	// durableMembers is how many members the durable channel has.
	durableMembers = 10
	// maxAhead holds a publisher at most this many messages ahead of the stage that reads the
	// retained stream (cotal's fan-out, raw's consumers): CHAT keeps 1000 messages per
	// sender+channel subject, and a burst past its reader would be evicted unread
	// (docs/durable.md "Gaps and losses"), so both sides run closed loop.
	maxAhead = 500
)

var (
	figDurableRate = figure{key: "rate", metric: "surfaced+acked copies/s", unit: "copies/s", target: atLeastJSON(0.6)}
	figDurableLag  = figure{key: "lag", metric: "backstop lag after the last publish", unit: "ms"}
)

func durableCases(c Config) []Case {
	var out []Case
	for _, size := range c.Payloads {
		name := fmt.Sprintf("%s, 1→%d members", sizeName(size), durableMembers)
		out = append(out, Case{Name: name, run: func(ctx context.Context, s *suite) ([]Row, error) {
			return s.durableCase(ctx, envOptions{}, titleDurable, name, size)
		}})
	}
	return out
}

// durableCase: one publisher, durableMembers members of a durable channel (SPEC §4, §7).
// cotal's copies go CHAT → fan-out → DLV → dlv_<id> → Handler → ack (delivery/doc.go; every
// member's ACL is known, so no copy waits in INBOX), beside the live copy each member also
// gets and deduplicates. Raw publishes to a stream like CHAT read by one pull consumer per member
// with explicit acks. The clock stops when every member's copies are acked; the lag is the
// time from the last publish acknowledgement to that point.
func (s *suite) durableCase(ctx context.Context, o envOptions, title, caseName string, size int) ([]Row, error) {
	env, err := newEnv(ctx, o)
	if err != nil {
		return nil, err
	}
	defer env.close()
	if err := env.rawStream(ctx, "RAWDUR", "raw.dur.>", func(c *jetstream.StreamConfig) {
		c.MaxMsgsPerSubject = perSubject
	}); err != nil {
		return nil, err
	}
	d := durable{s: s, env: env, text: payload(size)}
	envelope, err := jsonBody(wire.NewChannelMessage(benchSpace, rawSender, "durable", wire.TextPart(d.text)))
	if err != nil {
		return nil, err
	}
	return s.compare(ctx, title, caseName, []figure{figDurableRate, figCPU, figDurableLag},
		[3]side{d.cotal, d.raw(bareBody(d.text)), d.raw(envelope)})
}

type durable struct {
	s    *suite
	env  *env
	text string
}

func (d durable) cotal(ctx context.Context, run int) (figures, error) {
	channel := fmt.Sprintf("durable.r%d", run)
	if err := d.env.setClass(ctx, channel, wire.DeliveryDurable); err != nil {
		return nil, err
	}
	var got tally
	h := func(context.Context, endpoint.Delivery) error { got.add(); return nil }
	var eps []*endpoint.Endpoint
	defer func() { closeAll(eps) }()
	for i := range durableMembers {
		ep, err := d.env.agent(ctx, fmt.Sprintf("member%d", i), "", h)
		if err != nil {
			return nil, err
		}
		eps = append(eps, ep)
		res, err := ep.Join(ctx, channel)
		if err != nil {
			return nil, err
		}
		if res.State != endpoint.JoinedDurable {
			return nil, fmt.Errorf("member %d joined %q: %s", i, res.State, res.Reason)
		}
	}
	pub, err := d.env.agent(ctx, "pub", "", nil)
	if err != nil {
		return nil, err
	}
	eps = append(eps, pub)
	stats := func() delivery.Stats {
		st, _ := d.env.mesh.DeliveryStats(benchSpace)
		return st
	}
	base, err := d.env.mesh.DeliveryStats(benchSpace)
	if err != nil {
		return nil, err
	}
	fannedOut := func() int64 { return (stats().FannedOutDurable - base.FannedOutDurable) / durableMembers }
	delivered := func() int64 { return stats().ReaderDelivered - base.ReaderDelivered }
	msgs := d.s.cfg.DurableMessages
	start, cpu := time.Now(), startCPU()
	pending := make([]*endpoint.PendingReceipt, 0, msgs)
	for i := range msgs {
		for int64(i)-fannedOut() > maxAhead {
			time.Sleep(100 * time.Microsecond) // closed loop: the fan-out is the pace, see maxAhead
		}
		p, err := pub.SendAsync(channel, []wire.Part{wire.TextPart(d.text)})
		if err != nil {
			return nil, err
		}
		pending = append(pending, p)
	}
	if err := waitReceipts(ctx, pending); err != nil {
		return nil, err
	}
	published := time.Now()
	want := int64(msgs * durableMembers)
	if err := await(ctx, "durable copies on DLV", delivered, func() (bool, error) {
		return delivered() >= want, nil
	}); err != nil {
		return nil, fmt.Errorf("%w; delivery stats %+v", err, stats())
	}
	consumers := make([]string, len(eps)-1)
	for i, ep := range eps[:len(eps)-1] {
		consumers[i] = d.env.names.DLVConsumer(ep.ID())
	}
	if err := d.env.awaitDrained(ctx, d.env.names.DLVStream(), consumers); err != nil {
		return nil, err
	}
	done := time.Now()
	if st := stats(); st.GapsDetected != base.GapsDetected || st.ReaderGaps != base.ReaderGaps {
		return nil, fmt.Errorf("the backstop reported gaps during the run: %+v", st)
	}
	f := figures{"rate": rate(want, done.Sub(start)), "lag": float64(done.Sub(published)) / float64(time.Millisecond)}
	cpu.perMessage(f, want)
	return f, nil
}

// raw is the raw side carrying body.
func (d durable) raw(body rawBody) side {
	return func(ctx context.Context, run int) (figures, error) { return d.rawRun(ctx, body, run) }
}

func (d durable) rawRun(ctx context.Context, body rawBody, run int) (figures, error) {
	subject := fmt.Sprintf("raw.dur.pub.%s%d", body.tag, run)
	counts := make([]atomic.Int64, durableMembers)
	var got tally
	consumers := make([]string, durableMembers)
	for i := range durableMembers {
		consumers[i] = fmt.Sprintf("rawdur-%s%d-m%d", body.tag, run, i)
		if err := d.env.rawConsumer(ctx, "RAWDUR", consumers[i], subject); err != nil {
			return nil, err
		}
		nc, js, err := d.env.conn()
		if err != nil {
			return nil, err
		}
		defer nc.Close()
		cons, err := js.Consumer(ctx, "RAWDUR", consumers[i])
		if err != nil {
			return nil, err
		}
		cc, err := cons.Consume(func(m jetstream.Msg) {
			body.receive(m.Data())
			counts[i].Add(1)
			got.add()
			_ = m.Ack()
		})
		if err != nil {
			return nil, err
		}
		defer cc.Stop()
	}
	slowest := func() int64 {
		low := counts[0].Load()
		for i := range counts[1:] {
			low = min(low, counts[i+1].Load())
		}
		return low
	}
	nc, js, err := d.env.conn()
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	data := body.data
	msgs := d.s.cfg.DurableMessages
	start, cpu := time.Now(), startCPU()
	futures := make([]jetstream.PubAckFuture, 0, msgs)
	for i := range msgs {
		for int64(i)-slowest() > maxAhead {
			time.Sleep(100 * time.Microsecond) // closed loop, as on the cotal side
		}
		f, err := js.PublishAsync(subject, data)
		if err != nil {
			return nil, err
		}
		futures = append(futures, f)
	}
	if err := waitFutures(ctx, futures); err != nil {
		return nil, err
	}
	published := time.Now()
	want := int64(msgs * durableMembers)
	if err := got.waitCount(ctx, want); err != nil {
		return nil, err
	}
	if err := d.env.awaitDrained(ctx, "RAWDUR", consumers); err != nil {
		return nil, err
	}
	done := time.Now()
	f := figures{"rate": rate(want, done.Sub(start)), "lag": float64(done.Sub(published)) / float64(time.Millisecond)}
	cpu.perMessage(f, want)
	return f, nil
}

// awaitDrained waits until every consumer of stream holds nothing pending or unacked.
func (e *env) awaitDrained(ctx context.Context, stream string, consumers []string) error {
	left := slices.Clone(consumers)
	var drained atomic.Int64
	return await(ctx, stream+" consumers drained", drained.Load, func() (bool, error) {
		for len(left) > 0 {
			ok, err := e.drained(ctx, stream, left[0])
			if err != nil || !ok {
				return false, err
			}
			left = left[1:]
			drained.Add(1)
		}
		return true, nil
	})
}
