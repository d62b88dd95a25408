package endpoint

import (
	"context"
	"errors"
	"fmt"
	"github.com/cotal-go/cotal/wire"
	"io"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// preAuthFailuresAllowed is how many reconnect attempts in a row may be dropped before
// authentication before the Endpoint gives up and reports ErrControlLine.
const preAuthFailuresAllowed = 3

// controlLineHint says what to do about ErrControlLine (docs/storage.md "Broker settings").
const controlLineHint = "the CONNECT line, which carries the credential's grants, may exceed the " +
	"broker's max_control_line (default 4 KiB, about two channel grants); set max_control_line " +
	"to 65536 on the broker, or mint a credential with fewer grants"

// connWatch follows the connection's life for the rest of the Endpoint.
type connWatch struct {
	mu          sync.Mutex
	reconnected chan struct{} // closed and replaced at every reconnect
	natsClosed  chan struct{} // closed when the NATS connection is closed
	closed      chan struct{} // closed when the Endpoint stops (Done)
	stopErr     error
	preAuth     int // reconnect attempts in a row dropped before authentication
	natsOnce    sync.Once
	finishOnce  sync.Once
}

func (c *connWatch) init() {
	c.reconnected = make(chan struct{})
	c.natsClosed = make(chan struct{})
	c.closed = make(chan struct{})
}

// reconnectSignal returns a channel closed at the next reconnect.
func (c *connWatch) reconnectSignal() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reconnected
}

func (c *connWatch) signalReconnect() {
	c.mu.Lock()
	defer c.mu.Unlock()
	close(c.reconnected)
	c.reconnected = make(chan struct{})
	c.preAuth = 0
}

// finish records why the Endpoint stopped; the first reason wins.
func (c *connWatch) finish(err error) {
	c.finishOnce.Do(func() {
		c.mu.Lock()
		c.stopErr = err
		c.mu.Unlock()
		close(c.closed)
	})
}

func (c *connWatch) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopErr
}

// dial connects with the instance inbox prefix set before anything else (SPEC §9 item 1,
// §10), bounded reconnects (unless Options.ReconnectForever), and handlers that keep subscriptions, bindings and watches
// honest across reconnects. It refuses brokers older than MinServerVersion.
func (e *Endpoint) dial(url string, extra []nats.Option) error {
	o := e.opts
	maxReconnects := o.MaxReconnects
	if o.ReconnectForever {
		maxReconnects = -1 // nats.go: no limit
	}
	opts := append([]nats.Option{
		nats.CustomInboxPrefix(wire.InboxPrefix(e.id)),
		nats.Name("cotal:" + e.card.Name),
		nats.MaxReconnects(maxReconnects),
		nats.ReconnectWait(o.ReconnectWait),
		nats.ErrorHandler(e.onAsyncError),
		nats.DisconnectErrHandler(e.onDisconnect),
		nats.ReconnectHandler(e.onReconnect),
		nats.ReconnectErrHandler(e.onReconnectErr),
		nats.ClosedHandler(e.onClosed),
	}, extra...)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		if preAuthFailure(err) {
			return fmt.Errorf("%w (%v): %s", ErrControlLine, err, controlLineHint)
		}
		return fmt.Errorf("connect to %s: %w", url, err)
	}
	e.nc = nc
	if v := nc.ConnectedServerVersion(); !serverAtLeast(v, MinServerVersion) {
		nc.Close()
		return fmt.Errorf("%w: nats-server %s, cotal needs %s or newer; upgrade the broker",
			ErrServerTooOld, v, MinServerVersion)
	}
	return nil
}

// preAuthFailure reports whether err is what a broker does to a client whose CONNECT it will
// not read: an explicit max_control_line error, or the connection closed under it.
func preAuthFailure(err error) bool {
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "maximum control line") || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrClosedPipe) || strings.Contains(s, "connection reset")
}

var versionRe = regexp.MustCompile(`^v?(\d+)\.(\d+)`)

// serverAtLeast compares the major.minor of a server version string with min's.
func serverAtLeast(version, min string) bool {
	v, m := versionRe.FindStringSubmatch(version), versionRe.FindStringSubmatch(min)
	if v == nil || m == nil {
		return false
	}
	num := func(s string) int { n, _ := strconv.Atoi(s); return n }
	if num(v[1]) != num(m[1]) {
		return num(v[1]) > num(m[1])
	}
	return num(v[2]) >= num(m[2])
}

// onAsyncError handles errors the broker reports outside any call. A refused publish or
// reply subscription ends the calls and asynchronous sends waiting on it; a refused channel
// subscription is a late join refusal (SPEC §7); the rest is logged.
func (e *Endpoint) onAsyncError(_ *nats.Conn, _ *nats.Subscription, err error) {
	op, subject, ok := parseViolation(err)
	waited := ok && e.violations.refuse(op, subject, err)
	if ok && op == opPublish {
		waited = e.async.refuse(subject, refused(ErrPublishRefused, err)) || waited
	}
	switch {
	case waited:
	case ok && op == opSubscribe:
		e.refuseLate(subject, err)
	default:
		e.log.Warn("broker reported an error", "err", err)
	}
}

// onDisconnect reports a lost connection. Close disconnects too, with no error: that is the
// Endpoint's own doing and no warning.
func (e *Endpoint) onDisconnect(_ *nats.Conn, err error) {
	level := slog.LevelWarn
	if e.ctx.Err() != nil {
		level = slog.LevelDebug
	}
	e.log.Log(context.Background(), level, "disconnected", "err", err)
	e.emit(Event{Kind: EventDisconnected, Err: err})
}

func (e *Endpoint) onReconnect(nc *nats.Conn) {
	e.log.Info("reconnected", "server", nc.ConnectedUrlRedacted())
	e.conn.signalReconnect()
	e.emit(Event{Kind: EventReconnected})
}

// onReconnectErr counts reconnect attempts the broker drops before authentication and gives up
// after preAuthFailuresAllowed of them, instead of retrying a CONNECT the broker will never
// read (docs/storage.md "Broker settings").
func (e *Endpoint) onReconnectErr(nc *nats.Conn, err error) {
	if err == nil || !preAuthFailure(err) {
		return
	}
	e.conn.mu.Lock()
	e.conn.preAuth++
	n := e.conn.preAuth
	e.conn.mu.Unlock()
	if n < preAuthFailuresAllowed {
		return
	}
	stop := fmt.Errorf("%w %d times in a row (%v): %s", ErrControlLine, n, err, controlLineHint)
	e.log.Error("giving up reconnecting", "err", stop)
	e.conn.finish(stop)
	nc.Close()
}

// onClosed runs when the connection is closed for good, by Close or because reconnects ran
// out; in the latter case the Endpoint stops and Err says why.
func (e *Endpoint) onClosed(nc *nats.Conn) {
	e.conn.natsOnce.Do(func() { close(e.conn.natsClosed) })
	select {
	case <-e.ctx.Done():
		return // Close is under way
	default:
	}
	err := e.credentialEnded(nc.LastError())
	if err == nil {
		err = errors.New("connection closed")
	}
	e.conn.finish(fmt.Errorf("connection lost: %w", err))
	e.log.Error("connection closed for good", "err", err)
	e.emit(Event{Kind: EventClosed, Err: err})
	e.cancel()
}

// credentialEnded says why the broker refused the Endpoint's credential, when err is such a
// refusal: ErrCredentialExpired once the JWT's expiry has passed, ErrCredentialRefused
// otherwise (a revocation, or a re-mint that replaced it). Any other err is returned as is.
func (e *Endpoint) credentialEnded(err error) error {
	if err == nil {
		return nil
	}
	// nats.go reports a refusal during a reconnect as the broker's text, not its sentinel.
	text := strings.ToLower(err.Error())
	expired := errors.Is(err, nats.ErrAuthExpired) || strings.Contains(text, "authentication expired")
	refused := errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthRevoked) ||
		strings.Contains(text, "authorization violation") || strings.Contains(text, "authentication revoked")
	if !expired && !refused {
		return err
	}
	// The broker ends a connection up to a second before the JWT's expiry, which is in seconds.
	if expired || (!e.expires.IsZero() && time.Now().Add(2*time.Second).After(e.expires)) {
		return fmt.Errorf("%w at %s (%v): mint a new one (cotal auth mint; --expires-in or --no-expiry for a longer life) and connect with it",
			ErrCredentialExpired, e.expires.Format(time.RFC3339), err)
	}
	return fmt.Errorf("%w (%v): it was revoked or replaced by a re-mint; ask whoever runs the mesh for a new one",
		ErrCredentialRefused, err)
}
