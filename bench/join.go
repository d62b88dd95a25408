package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/cotal-go/cotal/broker"
	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/wire"
)

const (
	titleJoin = "10. Durable join"
	// joinEndpoints endpoints each join joinChannels durable channels, one after another as an
	// Endpoint does at connect, all endpoints at once: the start of the chaos load test.
	joinEndpoints = 50
	joinChannels  = 6
	// joinPublishers publish on the channels throughout, each every joinPublishEvery, so the
	// fan-out holds the join fence while the joins arrive.
	joinPublishers   = 5
	joinPublishEvery = 20 * time.Millisecond
	// joinLate is the Endpoint's durable-join budget (SPEC §7): an answer after it comes back
	// as "durable backstop unavailable".
	joinLate = 2 * time.Second
	// joinWait is each request's own budget here, long enough that a late answer is measured
	// rather than lost.
	joinWait = 60 * time.Second
	// joinTargetP99 is the budget for the p99 round trip, in ms.
	joinTargetP99 = 200
)

var (
	figJoinP50 = figure{key: "p50", metric: "durableJoin round trip p50, concurrent joins", unit: "ms"}
	figJoinP99 = figure{key: "p99", metric: "durableJoin round trip p99, concurrent joins", unit: "ms",
		target: &Target{Goal: Below, Value: joinTargetP99}}
	figJoinLate = figure{key: "late", metric: "joins not durable within the endpoint's 2 s budget", unit: "joins",
		target: &Target{Goal: Below, Value: 1}}
)

func joinCases(Config) []Case {
	load := fmt.Sprintf("%d endpoints × %d channels, %d publishers", joinEndpoints, joinChannels, joinPublishers)
	var out []Case
	for _, st := range []struct {
		name string
		o    envOptions
	}{
		{"memory", envOptions{}},
		{"file, sync always", envOptions{file: true, sync: broker.SyncAlways}},
	} {
		name := load + ", " + st.name
		out = append(out, Case{Name: name, run: func(ctx context.Context, s *suite) ([]Row, error) {
			env, err := newEnv(ctx, st.o)
			if err != nil {
				return nil, err
			}
			defer env.close()
			return s.pair(ctx, titleJoin, name, []figure{figJoinP50, figJoinP99, figJoinLate},
				func(ctx context.Context, run int) (figures, error) { return joinRun(ctx, env, run) }, nil)
		}})
	}
	return out
}

// joinRun times every durableJoin round trip (SPEC §7; docs/storage.md "Control service") from
// the Endpoint's side, the request Join makes, while publishers load the mesh. There is no raw
// side: raw NATS has no durable membership.
func joinRun(ctx context.Context, env *env, run int) (figures, error) {
	channels := make([]string, joinChannels)
	for i := range channels {
		channels[i] = fmt.Sprintf("join.r%d.c%d", run, i)
		if err := env.setClass(ctx, channels[i], wire.DeliveryDurable); err != nil {
			return nil, err
		}
	}
	eps, err := connectFleet(ctx, env, "joiner", joinEndpoints+joinPublishers)
	defer func() { closeAll(eps) }()
	if err != nil {
		return nil, err
	}
	stop := startPublishers(ctx, eps[joinEndpoints:], channels)
	samples, err := joinAll(ctx, eps[:joinEndpoints], channels)
	if perr := stop(); err == nil {
		err = perr
	}
	if err != nil {
		return nil, err
	}
	f := figures{}
	f[figJoinP50.key] = millis(percentile(samples, 50))
	f[figJoinP99.key] = millis(percentile(samples, 99))
	late := 0
	for _, d := range samples {
		if d > joinLate {
			late++
		}
	}
	f[figJoinLate.key] = float64(late)
	return f, nil
}

// connectFleet connects n endpoints that acknowledge every delivery, at most
// connectConcurrency at a time.
func connectFleet(ctx context.Context, env *env, prefix string, n int) ([]*endpoint.Endpoint, error) {
	eps := make([]*endpoint.Endpoint, n)
	errs := make([]error, n)
	sem := make(chan struct{}, connectConcurrency)
	ack := func(context.Context, endpoint.Delivery) error { return nil }
	var wg sync.WaitGroup
	for i := range eps {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			eps[i], errs[i] = env.agent(ctx, fmt.Sprintf("%s%d", prefix, i), "", ack)
		})
	}
	wg.Wait()
	var out []*endpoint.Endpoint
	for i, ep := range eps {
		if errs[i] != nil {
			return out, errs[i]
		}
		out = append(out, ep)
	}
	return out, nil
}

// startPublishers has each publisher publish on the channels in turn every joinPublishEvery
// until the returned stop is called, which reports the first publish error.
func startPublishers(ctx context.Context, pubs []*endpoint.Endpoint, channels []string) (stop func() error) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	errs := make([]error, len(pubs))
	for i, pub := range pubs {
		wg.Go(func() {
			tick := time.NewTicker(joinPublishEvery)
			defer tick.Stop()
			for n := 0; ; n++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				_, err := pub.Send(ctx, channels[n%len(channels)], []wire.Part{wire.TextPart("load")})
				if err != nil && ctx.Err() == nil {
					errs[i] = err
					return
				}
			}
		})
	}
	return func() error {
		cancel()
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return fmt.Errorf("publisher: %w", err)
			}
		}
		return nil
	}
}

// joinAll has every joiner join every channel, one after another, all joiners at once, and
// returns each round trip. A join that is not durable counts as longer than joinLate.
func joinAll(ctx context.Context, joiners []*endpoint.Endpoint, channels []string) ([]time.Duration, error) {
	samples := make([][]time.Duration, len(joiners))
	errs := make([]error, len(joiners))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, ep := range joiners {
		wg.Go(func() {
			<-start
			for _, ch := range channels {
				d, err := timeJoin(ctx, ep, ch)
				if err != nil {
					errs[i] = err
					return
				}
				samples[i] = append(samples[i], d)
			}
		})
	}
	close(start)
	wg.Wait()
	var out []time.Duration
	for i := range joiners {
		if errs[i] != nil {
			return nil, errs[i]
		}
		out = append(out, samples[i]...)
	}
	return out, nil
}

// timeJoin sends one durableJoin and returns its round trip, or a time past joinLate when the
// service answered but did not make the membership durable.
func timeJoin(ctx context.Context, ep *endpoint.Endpoint, channel string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, joinWait)
	defer cancel()
	t0 := time.Now()
	r, err := ep.Request(ctx, wire.DeliveryService, wire.OpDurableJoin, wire.DurableJoinArgs{Channel: channel})
	d := time.Since(t0)
	if err != nil {
		return 0, fmt.Errorf("durableJoin %s: %w", channel, err)
	}
	var reply wire.DurableJoinReply
	if err := json.Unmarshal(r.Data, &reply); err != nil {
		return 0, fmt.Errorf("durableJoin %s reply: %w", channel, err)
	}
	if !reply.Durable {
		return max(d, joinLate+time.Nanosecond), nil
	}
	return d, nil
}

// millis is d in milliseconds.
func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
