package delivery

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/internal/loggate"
	"github.com/cotal-go/cotal/internal/retry"
	"github.com/cotal-go/cotal/wire"
)

// closeStartTimeout bounds how long a failed Start waits for the loops it started to stop.
const closeStartTimeout = 10 * time.Second

// bindTimeout bounds one bucket lookup of Start, and bindTries how many it sends per bucket.
// A lookup sent while the bucket's stream has no leader, because the node that led it just
// died (the moment a cluster's backstop moves), is never answered; waiting for the rest of
// Start's bound would fail the start, while asking again is answered as soon as the stream
// has a new leader.
const (
	bindTimeout = 2 * time.Second
	bindTries   = 5
)

// Service is the durable backstop of one space (SPEC §4, §7, §8, §9 item 5): the membership
// registry and its control service, the fan-out writer and the trusted reader, each loop under
// a supervisor. See the package documentation for what it guarantees.
type Service struct {
	cfg      Config
	log      *slog.Logger
	names    wire.Names
	js       jetstream.JetStream
	members  *registry
	channels *kvCache[channelRow]
	presence *kvCache[presenceRow]
	gaps     gapLog
	inGaps   gapLog // INBOX sequences the reader never saw
	quota    handoffQuota
	requests wire.RequestLog // control request ids seen recently
	// refusedLog paces the log lines of control requests refused for their reply subject.
	refusedLog loggate.Gate
	backlog    *backlog
	stats      counters
	sup        *supervisor
	// stalePresenceLogged is set once a stretch of mentions resolved on a presence cache that
	// is not current was logged (noteStalePresence).
	stalePresenceLogged atomic.Bool
	cancel              context.CancelFunc

	channelsKV jetstream.KeyValue
}

// Start opens the space's buckets, starts every loop and returns once each has been up once:
// the membership registry loaded, the channel and presence caches filled, the fanout and reader
// consumers created (docs/storage.md "Consumers") and the control service subscribed. ctx bounds
// only this startup; the loops run until Close. The streams and buckets must exist (the mesh
// provisions them first).
func Start(ctx context.Context, cfg Config) (*Service, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	js, err := jetstream.New(cfg.Conn)
	if err != nil {
		return nil, fmt.Errorf("delivery: open JetStream: %w", err)
	}
	s := &Service{cfg: cfg, log: cfg.Logger.With("component", "delivery", "space", cfg.Names.Space()),
		names: cfg.Names, js: js, backlog: newBacklog()}
	if err := s.openRegistries(ctx); err != nil {
		return nil, err
	}
	s.sup = &supervisor{log: s.log, backoff: cfg.RestartBackoff, maxBackoff: cfg.MaxRestartBackoff}
	s.sup.loops = s.loops()

	life, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.sup.start(life)
	if err := s.sup.waitFirstUp(ctx); err != nil {
		closeCtx, done := context.WithTimeout(context.Background(), closeStartTimeout)
		defer done()
		_ = s.Close(closeCtx)
		return nil, fmt.Errorf("delivery: start: %w", err)
	}
	return s, nil
}

// openRegistries binds the membership, channel and presence buckets.
func (s *Service) openRegistries(ctx context.Context) error {
	n := s.names
	membersKV, err := s.bind(ctx, n.DurableMembersBucket())
	if err != nil {
		return err
	}
	channelsKV, err := s.bind(ctx, n.ChannelsBucket())
	if err != nil {
		return err
	}
	// The presence cache follows the bucket's subjects rather than watching it (follow.go);
	// binding it only checks that it exists.
	if _, err := s.bind(ctx, n.PresenceBucket()); err != nil {
		return err
	}
	s.members = &registry{
		view: newMemberView(), kv: membersKV, js: s.js, chatStream: n.ChatStream(), log: s.log,
		repairs: &s.stats.registryRepairs, invalid: &s.stats.registryInvalid, loaded: newGate(),
		kick: make(chan struct{}, 1), revs: map[string]uint64{},
	}
	s.channels = newKVCache(n.ChannelsBucket(), decodeChannelRow, &s.stats.registryInvalid, s.log)
	s.presence = newKVCache(n.PresenceBucket(), decodePresenceRow, &s.stats.registryInvalid, s.log)
	s.presence.quick = presenceRow.heartbeat
	if s.cfg.OnPresenceFlood != nil {
		var meter presenceMeter
		s.presence.written = func(key string) {
			if meter.write(key, time.Now()) {
				s.cfg.OnPresenceFlood(key)
			}
		}
	}
	s.channelsKV = channelsKV
	return nil
}

// loops lists the supervised loops.
func (s *Service) loops() []*loop {
	return []*loop{
		newLoop(LoopMembers, s.members.run),
		newLoop(LoopChannels, func(ctx context.Context, up func()) error {
			return s.channels.run(ctx, s.channelsKV, up)
		}),
		newLoop(LoopPresence, func(ctx context.Context, up func()) error {
			return s.presence.follow(ctx, s.cfg.Conn, s.js, up)
		}),
		newLoop(LoopFanout, s.runFanout),
		newLoop(LoopReader, s.runReader),
		newLoop(LoopControl, s.runControl),
	}
}

// Healthy returns nil when every loop is serving, and otherwise an error wrapping ErrUnhealthy
// that names each loop that is down and its last error. A down loop is being restarted.
func (s *Service) Healthy() error { return s.sup.health() }

// Stats returns a snapshot of the counters.
func (s *Service) Stats() Stats {
	st := s.stats.snapshot()
	st.Restarts = s.sup.restarts.Load()
	return st
}

// Close stops every loop and waits for them, or for ctx to end, then writes the losses counted
// since the last write into their membership records. It leaves the connection open: it
// belongs to the caller. Messages in flight stay unacknowledged and are redelivered to the
// next Service, so stopping loses nothing stored.
func (s *Service) Close(ctx context.Context) error {
	s.cancel()
	done := make(chan struct{})
	go func() {
		s.sup.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("delivery: close: loops still running: %w", ctx.Err())
	}
	if s.members.loaded.isOpen() {
		s.members.flushLost(ctx)
	}
	s.js.CleanupPublisher()
	return nil
}

// Interrupt stops the named loop (LoopFanout, LoopReader, ...) as a crash would and keeps
// the supervisor from restarting it until release is called; then it restarts as after any
// failure. While it is down Healthy names it and durable joins are refused with a reason.
// It is a fault drill: operators and tests use it to prove health reporting and recovery,
// and nothing is lost by it, since every loop acks only what it finished.
func (s *Service) Interrupt(name string) (release func(), err error) {
	return s.stopLoop(name, true)
}

// stopLoop stops the named loop and, with hold, keeps the supervisor from restarting it until
// release is called.
func (s *Service) stopLoop(name string, hold bool) (release func(), err error) {
	l, err := s.sup.find(name)
	if err != nil {
		return nil, err
	}
	return l.stop(hold), nil
}

// bind looks up bucket, asking again when an answer does not come within bindTimeout, for at
// most bindTries such attempts or until ctx ends.
func (s *Service) bind(ctx context.Context, bucket string) (jetstream.KeyValue, error) {
	ctx, cancel := context.WithTimeout(ctx, bindTries*bindTimeout)
	defer cancel()
	var kv jetstream.KeyValue
	if err := retry.Unanswered(ctx, bindTimeout, func(ctx context.Context) (err error) {
		kv, err = s.js.KeyValue(ctx, bucket)
		return err
	}); err != nil {
		return nil, fmt.Errorf("delivery: open bucket %s (is the space provisioned?): %w", bucket, err)
	}
	return kv, nil
}
