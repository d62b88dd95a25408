package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/wire"
)

// readWait bounds each broker call a read command makes.
const readWait = 10 * time.Second

// errOutsideACL: the broker refused a read the credential holds no grant for (SPEC §9).
var errOutsideACL = errors.New("outside this credential's read ACL")

// reader is a read-only connection for tail, who, history and channels list. It announces
// no presence and binds no consumer, so it takes nothing from anyone: it works with every
// profile's grants (agent within its allowSubscribe, observer, admin; SPEC Appendix B).
type reader struct {
	nc    *nats.Conn
	js    jetstream.JetStream
	names wire.Names
	id    string

	mu      sync.Mutex
	refused context.CancelCauseFunc // ends the guarded call in progress on a permission violation
}

// withReader opens the session want describes (minting a short-lived credential beside
// `cotal up`), dials a read-only connection with it, runs fn, and closes both.
func withReader(cmd *cobra.Command, f *clientFlags, want mintFor, fn func(*session, *reader) error) error {
	s, err := openSession(cmd, f, want)
	if err != nil {
		return err
	}
	defer s.close(want)
	r, err := s.dialReader()
	if err != nil {
		return err
	}
	defer r.close()
	return fn(s, r)
}

// dialReader connects with the session's credential and the instance inbox prefix (SPEC §10).
func (s *session) dialReader() (*reader, error) {
	r := &reader{names: wire.NewNames(s.link.Space), id: s.cred.id}
	opts := []nats.Option{
		nats.Name("cotal-cli"),
		nats.Timeout(5 * time.Second),
		nats.MaxReconnects(5),
		nats.ErrorHandler(r.onAsyncError),
	}
	if s.creds != nil {
		opts = append(opts, nats.UserCredentialBytes(s.creds), nats.CustomInboxPrefix(wire.InboxPrefix(s.cred.id)))
	}
	opts = append(opts, endpoint.LinkOptions(s.link)...)
	nc, err := nats.Connect(s.link.ServerURL(), opts...)
	if err != nil {
		return nil, s.connectError(err)
	}
	r.nc = nc
	if r.js, err = jetstream.New(nc); err != nil {
		nc.Close()
		return nil, err
	}
	return r, nil
}

// readerOn wraps an Endpoint's connection, which already carries the instance inbox prefix.
func readerOn(e *endpoint.Endpoint) (*reader, error) {
	js, err := jetstream.New(e.Conn())
	if err != nil {
		return nil, err
	}
	return &reader{nc: e.Conn(), js: js, names: wire.NewNames(e.Space()), id: e.ID()}, nil
}

func (r *reader) close() { r.nc.Close() }

func (r *reader) onAsyncError(_ *nats.Conn, _ *nats.Subscription, err error) {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return
	}
	r.mu.Lock()
	refused := r.refused
	r.mu.Unlock()
	if refused != nil {
		refused(fmt.Errorf("%w: %v", errOutsideACL, err))
	}
}

// guarded runs op with a context that ends at once when the broker refuses a request op
// makes, instead of running into the request's timeout; the refusal is the error then.
func (r *reader) guarded(ctx context.Context, op func(ctx context.Context) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	ctx, stop := context.WithTimeout(ctx, readWait)
	defer stop()
	r.mu.Lock()
	r.refused = cancel
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.refused = nil
		r.mu.Unlock()
		cancel(nil)
	}()
	err := op(ctx)
	if cause := context.Cause(ctx); errors.Is(cause, errOutsideACL) {
		return cause
	}
	return err
}

// subscribe subscribes to subject and returns once the broker accepted it; a refusal is
// known when the flush returns (the broker answers SUB before the PING).
func (r *reader) subscribe(ctx context.Context, subject string, h nats.MsgHandler) (*nats.Subscription, error) {
	before := r.nc.LastError()
	sub, err := r.nc.Subscribe(subject, h)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, readWait)
	defer cancel()
	if err := r.nc.FlushWithContext(ctx); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("confirm the subscription to %s: %w", subject, err)
	}
	if after := r.nc.LastError(); after != before && errors.Is(after, nats.ErrPermissionViolation) && strings.Contains(after.Error(), subject) {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("%w: %v", errOutsideACL, after)
	}
	return sub, nil
}

// chatCounts maps every channel of the space to the messages CHAT_<s> retains for it, from
// the stream's per-subject counts (cotal.<s>.chat.<sender>.<channel>, SPEC §3). filter is a
// channel pattern; ">" is every channel.
func (r *reader) chatCounts(ctx context.Context, filter string) (map[string]uint64, error) {
	var info *jetstream.StreamInfo
	err := r.guarded(ctx, func(ctx context.Context) error {
		s, err := r.js.Stream(ctx, r.names.ChatStream())
		if err != nil {
			return err
		}
		info, err = s.Info(ctx, jetstream.WithSubjectFilter(r.names.ChatFilter(filter)))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the channels of %s: %w", r.names.ChatStream(), err)
	}
	out := map[string]uint64{}
	for subject, n := range info.State.Subjects {
		if sub, err := wire.ParseSubject(subject); err == nil && sub.Kind == wire.KindChat {
			out[sub.Rest] += n
		}
	}
	return out, nil
}

// registry reads the channel registry (SPEC §7): every channel's config and the defaults.
// Values that do not decode are skipped (LAYOUT.md "Reply-subject injection").
func (r *reader) registry(ctx context.Context) (map[string]*wire.ChannelConfig, *wire.ChannelDefaults, error) {
	configs := map[string]*wire.ChannelConfig{}
	var defaults *wire.ChannelDefaults
	err := r.guarded(ctx, func(ctx context.Context) error {
		kv, err := r.js.KeyValue(ctx, r.names.ChannelsBucket())
		if err != nil {
			return err
		}
		w, err := kv.WatchAll(ctx, jetstream.IgnoreDeletes())
		if err != nil {
			return err
		}
		defer func() { _ = w.Stop() }()
		for {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case e := <-w.Updates():
				if e == nil {
					return nil
				}
				if e.Key() == wire.DefaultsKey {
					defaults, _ = wire.DecodeChannelDefaults(e.Value())
				} else if c, err := wire.DecodeChannelConfig(e.Value()); err == nil {
					configs[e.Key()] = c
				}
			}
		}
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read the channel registry %s: %w", r.names.ChannelsBucket(), err)
	}
	return configs, defaults, nil
}

// stored is one retained CHAT message.
type stored struct {
	seq     uint64
	subject string
	data    []byte
}

// history reads the last limit messages retained for a channel pattern through the pinned
// single-filter history consumer chathist_<id>, the one CHAT read an agent holds (SPEC §8,
// §9 item 4); observer and admin may create it too. The consumer is deleted before and after.
func (r *reader) history(ctx context.Context, channel string, limit int) ([]stored, error) {
	var out []stored
	stream, name := r.names.ChatStream(), r.names.HistoryConsumer(r.id)
	err := r.guarded(ctx, func(ctx context.Context) error {
		_ = r.js.DeleteConsumer(ctx, stream, name)
		cons, err := r.js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{
			Durable: name, FilterSubject: r.names.ChatFilter(channel), AckPolicy: jetstream.AckNonePolicy,
			DeliverPolicy: jetstream.DeliverAllPolicy, MemoryStorage: true, InactiveThreshold: 30 * time.Second,
		})
		if err != nil {
			return err
		}
		defer func() { _ = r.js.DeleteConsumer(context.WithoutCancel(ctx), stream, name) }()
		out, err = fetchLast(cons, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the history of %s: %w", channel, err)
	}
	return out, nil
}

// fetchLast drains cons and keeps its last limit messages.
func fetchLast(cons jetstream.Consumer, limit int) ([]stored, error) {
	var out []stored
	pending := cons.CachedInfo().NumPending
	for pending > 0 {
		batch, err := cons.FetchNoWait(int(min(pending, 256)))
		if err != nil {
			return out, err
		}
		n := 0
		for m := range batch.Messages() {
			n++
			md, err := m.Metadata()
			if err != nil {
				continue
			}
			pending = md.NumPending
			out = append(out, stored{seq: md.Sequence.Stream, subject: m.Subject(), data: m.Data()})
			if len(out) > limit {
				out = out[1:]
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return out, err
		}
		if n == 0 {
			break
		}
	}
	return out, nil
}

// lastOf merges per-channel histories by stream sequence and keeps the last limit.
func lastOf(lists [][]stored, limit int) []stored {
	var all []stored
	for _, l := range lists {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].seq < all[j].seq })
	if len(all) > limit {
		all = all[len(all)-limit:]
	}
	return all
}
