package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/wire"
)

const (
	// burstWindow is how long after a burst began its receiver is judged.
	burstWindow = 5 * time.Second
	// burstSenders is how many sends of the burst are in flight at once, each awaiting its
	// acknowledgement: the sender goes as fast as the mesh stores.
	burstSenders = 8
	// burstSync is the durability the case runs with: the default of cotal up.
	burstSync = "always"
)

var (
	figBurstSurfaced = figure{key: "surfaced", metric: "DMs surfaced 5 s after the burst began", unit: "DMs",
		target: atLeast(0.9)}
	figBurstStored = figure{key: "stored", metric: "DMs stored in those 5 s", unit: "DMs"}
	// figBurstShare is the receiver's alone: the surfaced count also follows the sender's pace,
	// which the receiver's CPU slows on a machine whose cores it shares.
	figBurstShare = figure{key: "share", metric: "share of the stored DMs surfaced by then", unit: "%"}
	figBurstGap   = figure{key: "gap", metric: "longest wait for the next surfaced DM in those 5 s", unit: "ms"}
)

// burstNote says what the sides of the sustained case are.
const burstNote = "cotal up in its own process, file storage; one cotal sender with 8 sends in " +
	"flight for both sides; raw receives with nats.go's default pull (500 a batch)"

// burstCase is the sustained DM case: a burst of c.Burst DMs sent as fast as the mesh stores
// them while one receiver surfaces them, judged 5 s after it began.
func burstCase(c Config, size int) Case {
	name := fmt.Sprintf("sustained DM, %s, sync %s", sizeName(size), burstSync)
	return Case{Name: name, run: func(ctx context.Context, s *suite) ([]Row, error) {
		r, err := s.cfg.Remote(ctx, RemoteOptions{Sync: burstSync})
		if err != nil {
			return nil, fmt.Errorf("start the mesh: %w", err)
		}
		defer r.Close()
		p := &path{s: s, r: r, kind: pathDM, text: payload(size), names: wire.NewNames(benchSpace)}
		rows, err := s.pair(ctx, titlePath, name, []figure{figBurstSurfaced, figBurstStored, figBurstShare, figBurstGap},
			func(ctx context.Context, _ int) (figures, error) { return p.burst(ctx, false) },
			func(ctx context.Context, _ int) (figures, error) { return p.burst(ctx, true) })
		for i := range rows {
			rows[i].Note = burstNote
		}
		return rows, err
	}}
}

// burst runs one side of the sustained case: a fresh receiver (cotal's Endpoint, or raw
// nats.go consuming its dm_) and a fresh sender, then the burst.
func (p *path) burst(ctx context.Context, raw bool) (figures, error) {
	recv, sender, err := p.cast(ctx, "", "")
	if err != nil {
		return nil, err
	}
	w := &waits{}
	if raw {
		nc, js, err := p.dial(recv[0])
		if err != nil {
			return nil, err
		}
		defer nc.Close()
		if err := p.rawReceive(ctx, nc, js, recv[0], "", "", func([]byte) { w.arrive() }); err != nil {
			return nil, err
		}
	} else {
		h := func(context.Context, endpoint.Delivery) error { w.arrive(); return nil }
		ep, err := endpoint.Connect(ctx, endpoint.Options{Link: p.r.Link(), Creds: recv[0].creds, Name: "recv", Handler: h})
		if err != nil {
			return nil, err
		}
		defer closeAll([]*endpoint.Endpoint{ep})
	}
	pub, err := endpoint.Connect(ctx, endpoint.Options{Link: p.r.Link(), Creds: sender.creds, Name: "sender"})
	if err != nil {
		return nil, err
	}
	defer closeAll([]*endpoint.Endpoint{pub})
	return p.sendBurst(ctx, pub, recv[0].id, w)
}

// sendBurst sends the burst from pub to id with burstSenders sends in flight and reads the
// receiver's waits once every DM was surfaced or burstWindow passed, whichever is first.
func (p *path) sendBurst(ctx context.Context, pub *endpoint.Endpoint, id string, w *waits) (figures, error) {
	window, stop := context.WithTimeout(ctx, burstWindow)
	defer stop()
	parts := []wire.Part{wire.TextPart(p.text)}
	var stored tally
	errs := make(chan error, burstSenders)
	var wg sync.WaitGroup
	w.begin(time.Now())
	for k := range burstSenders {
		wg.Go(func() {
			for i := k; i < p.s.cfg.Burst && window.Err() == nil; i += burstSenders {
				if _, err := pub.SendDM(window, id, parts); err != nil {
					if window.Err() == nil {
						errs <- fmt.Errorf("send: %w", err)
					}
					return
				}
				stored.add()
			}
		})
	}
	err := await(window, "the burst surfaced", w.count, func() (bool, error) {
		return w.count() >= int64(p.s.cfg.Burst), nil
	})
	f, n := w.figures(time.Now()), stored.count()
	f[figBurstStored.key] = float64(n)
	if n > 0 {
		f[figBurstShare.key] = 100 * f[figBurstSurfaced.key] / float64(n)
	}
	stop()
	wg.Wait()
	close(errs)
	if e := <-errs; e != nil {
		return nil, e
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return nil, err
	}
	return f, ctx.Err()
}

// waits counts a receiver's arrivals and the longest time it went without one.
type waits struct {
	mu      sync.Mutex
	n       int64
	last    time.Time
	longest time.Duration
}

// begin starts the clock of the longest wait.
func (w *waits) begin(at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last, w.longest = at, 0
}

func (w *waits) arrive() {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	if !w.last.IsZero() {
		w.longest = max(w.longest, now.Sub(w.last))
		w.last = now
	}
}

// count is how many arrived.
func (w *waits) count() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// figures are the arrivals so far and the longest wait, the one still open at end included.
func (w *waits) figures(end time.Time) figures {
	w.mu.Lock()
	defer w.mu.Unlock()
	longest := max(w.longest, end.Sub(w.last))
	return figures{figBurstSurfaced.key: float64(w.n), figBurstGap.key: micros(longest) / 1000}
}
