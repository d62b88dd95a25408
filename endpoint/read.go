package endpoint

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/cotal-go/cotal/wire"
)

// Read errors.
var (
	// ErrReadRefused: the broker refused a read; the channel is outside this credential's
	// read ACL (SPEC §9).
	ErrReadRefused = errors.New("broker refused a read outside this credential's read ACL")
	// ErrInvalidRead: a read was asked with a value no read can take (a channel that is no
	// channel, a limit below one).
	ErrInvalidRead = errors.New("invalid read")
)

// History returns the last limit messages CHAT retains for channel, a channel name or pattern
// (SPEC §3), oldest first. It reads through the pinned single-filter history consumer
// chathist_<id>, the one CHAT read every profile holds (SPEC §8, §9 item 4), so it works for
// agents within their read ACL as for observers and admins. Each copy passes the receive
// checks of every other path and comes back with Meta.Historical and Meta.Seq set; a copy
// that fails them is terminated as on any path (counted in Stats, never returned). Own
// messages are included and no Handler is called. A channel outside the read ACL fails with
// ErrReadRefused as soon as the broker refuses it.
func (e *Endpoint) History(ctx context.Context, channel string, limit int) ([]Delivery, error) {
	if err := wire.ValidateChannel(channel); err != nil {
		return nil, fmt.Errorf("%w: history: %w", ErrInvalidRead, err)
	}
	if limit < 1 {
		return nil, fmt.Errorf("%w: history limit %d, want at least 1", ErrInvalidRead, limit)
	}
	name := wire.SanitizeChannel(channel)
	create := "$JS.API.CONSUMER.CREATE." + e.names.ChatStream() + "." + e.names.HistoryConsumer(e.id) +
		"." + e.names.ChatFilter(name)
	ctx, stop := e.violations.watch(ctx, opPublish, create, ErrReadRefused)
	defer stop()
	// Only the last limit copies are kept while reading, so a short read of a long history
	// stays small.
	var copies []inbound
	err := e.readHistory(ctx, name, math.MaxUint64, 0, func(in inbound) {
		if copies = append(copies, in); len(copies) > limit {
			copies = copies[1:]
		}
	})
	if err != nil {
		return nil, fmt.Errorf("read the history of %s: %w", name, refusal(ctx, err))
	}
	out := make([]Delivery, 0, len(copies))
	for _, in := range copies {
		m, meta, err := e.check(in)
		if err != nil {
			e.reject(in, err)
			continue
		}
		meta.Seq = in.seq
		out = append(out, Delivery{Message: m, Meta: meta})
	}
	return out, nil
}
