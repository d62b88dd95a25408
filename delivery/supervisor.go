package delivery

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cotal-go/cotal/internal/retry"
)

// The loops a Service runs, each under the supervisor; Healthy names the ones that are down.
const (
	// LoopFanout is the fan-out writer on the fanout consumer of CHAT_<s>.
	LoopFanout = "fanout"
	// LoopReader is the trusted reader on the reader consumer of INBOX_<s>.
	LoopReader = "reader"
	// LoopControl is the delivery control service on cotal.<s>.ctl.delivery.*.
	LoopControl = "control"
	// LoopMembers watches cotal_members_<s> and repairs records overwritten behind our back.
	LoopMembers = "membership watch"
	// LoopChannels watches the channel registry cotal_channels_<s>.
	LoopChannels = "channels watch"
	// LoopPresence watches the presence directory cotal_presence_<s>.
	LoopPresence = "presence watch"
)

// healthyRun is how long a loop must have run for its next failure to restart at the base
// backoff again instead of the doubled one.
const healthyRun = time.Minute

// loop is one supervised goroutine. run must call up once it is serving, and return when ctx
// is done or it can no longer serve; the supervisor then restarts it after a backoff.
type loop struct {
	name string
	run  func(ctx context.Context, up func()) error

	firstUp     chan struct{} // closed the first time the loop is up
	firstUpOnce sync.Once

	mu      sync.Mutex
	isUp    bool
	lastErr error
	cancel  context.CancelFunc // cancels the current run
	hold    chan struct{}      // test hook: while non-nil, a stopped loop waits for it to close
	stopped chan struct{}      // closed when the current run returns
}

func newLoop(name string, run func(ctx context.Context, up func()) error) *loop {
	return &loop{name: name, run: run, firstUp: make(chan struct{})}
}

func (l *loop) markUp() {
	l.mu.Lock()
	l.isUp, l.lastErr = true, nil
	l.mu.Unlock()
	l.firstUpOnce.Do(func() { close(l.firstUp) })
}

// status reports whether the loop is serving and, when it is not, why.
func (l *loop) status() (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.isUp, l.lastErr
}

// supervisor runs loops and restarts each one that stops, with capped exponential backoff.
type supervisor struct {
	log        *slog.Logger
	backoff    time.Duration
	maxBackoff time.Duration
	loops      []*loop
	restarts   atomic.Int64
	wg         sync.WaitGroup
}

// start runs every loop until ctx is done; wait returns once all of them have returned.
func (sv *supervisor) start(ctx context.Context) {
	for _, l := range sv.loops {
		sv.wg.Add(1)
		go func() {
			defer sv.wg.Done()
			sv.supervise(ctx, l)
		}()
	}
}

func (sv *supervisor) supervise(ctx context.Context, l *loop) {
	delay := sv.backoff
	for {
		began := time.Now()
		err := sv.runOnce(ctx, l)
		if ctx.Err() != nil {
			return
		}
		if time.Since(began) > healthyRun {
			delay = sv.backoff
		}
		sv.log.Error("delivery loop stopped; restarting", "loop", l.name, "err", err, "backoff", delay)
		if retry.Sleep(ctx, delay) != nil || !l.waitHold(ctx) {
			return
		}
		delay = min(2*delay, sv.maxBackoff)
		sv.restarts.Add(1)
	}
}

// runOnce runs l once and marks it down, with the reason, when it returns.
func (sv *supervisor) runOnce(ctx context.Context, l *loop) error {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopped := make(chan struct{})
	l.mu.Lock()
	l.cancel, l.stopped = cancel, stopped
	l.mu.Unlock()

	err := l.run(runCtx, l.markUp)
	if err == nil {
		err = fmt.Errorf("%s returned without an error", l.name)
	}
	l.mu.Lock()
	l.isUp, l.lastErr = false, err
	l.mu.Unlock()
	close(stopped)
	return err
}

// waitHold blocks while a test holds the loop down; it reports false when ctx ends first.
func (l *loop) waitHold(ctx context.Context) bool {
	l.mu.Lock()
	hold := l.hold
	l.mu.Unlock()
	if hold == nil {
		return true
	}
	select {
	case <-hold:
		return true
	case <-ctx.Done():
		return false
	}
}

// stop cancels the loop's current run and waits until it has returned and is marked down. With
// hold set, the supervisor does not restart the loop until release is called.
func (l *loop) stop(hold bool) (release func()) {
	l.mu.Lock()
	cancel, stopped := l.cancel, l.stopped
	h := make(chan struct{})
	if hold {
		l.hold = h
	}
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-stopped
	}
	return sync.OnceFunc(func() {
		l.mu.Lock()
		l.hold = nil
		l.mu.Unlock()
		close(h)
	})
}

// health returns nil when every loop is up, else an ErrUnhealthy naming each one that is down.
func (sv *supervisor) health() error {
	var down []string
	for _, l := range sv.loops {
		if up, err := l.status(); !up {
			reason := "not started"
			if err != nil {
				reason = err.Error()
			}
			down = append(down, fmt.Sprintf("%s is down (%s)", l.name, reason))
		}
	}
	if len(down) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrUnhealthy, strings.Join(down, "; "))
}

// isDown reports whether the named loop is not serving.
func (sv *supervisor) isDown(name string) bool {
	for _, l := range sv.loops {
		if l.name == name {
			up, _ := l.status()
			return !up
		}
	}
	return true
}

func (sv *supervisor) find(name string) (*loop, error) {
	for _, l := range sv.loops {
		if l.name == name {
			return l, nil
		}
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownLoop, name)
}

// waitFirstUp blocks until every loop has been up once, or ctx ends.
func (sv *supervisor) waitFirstUp(ctx context.Context) error {
	for _, l := range sv.loops {
		select {
		case <-l.firstUp:
		case <-ctx.Done():
			_, err := l.status()
			return fmt.Errorf("delivery loop %s did not start (last error: %v): %w", l.name, err, ctx.Err())
		}
	}
	return nil
}
