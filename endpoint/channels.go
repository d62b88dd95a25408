package endpoint

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/wire"
)

// ChannelInfo is one channel of the space: what CHAT retains for it and its config (SPEC §7).
type ChannelInfo struct {
	// Name is the channel in its sanitized wire form.
	Name string
	// Messages is how many messages CHAT retains for the channel, across senders.
	Messages uint64
	// Config is the channel's registry entry; nil without one.
	Config *wire.ChannelConfig
	// Class, Replay and ReplayWindow are the effective config: the channel's own setting,
	// else the space default, else SPEC §7's (durable, replay on, no window).
	Class        wire.DeliveryClass
	Replay       bool
	ReplayWindow time.Duration
}

// ChannelList is every channel of a space that has retained messages or a registry entry.
type ChannelList struct {
	// Defaults are the space defaults from the registry; nil when none are set.
	Defaults *wire.ChannelDefaults
	// Channels are sorted by name.
	Channels []ChannelInfo
}

// Channel returns the channel named name (sanitized wire form), if listed.
func (l ChannelList) Channel(name string) (ChannelInfo, bool) {
	i := slices.IndexFunc(l.Channels, func(c ChannelInfo) bool { return c.Name == name })
	if i < 0 {
		return ChannelInfo{}, false
	}
	return l.Channels[i], true
}

// Channels lists the channels of the space with their retained counts, from CHAT's per-subject
// counts (cotal.<s>.chat.<sender>.<channel>, SPEC §3), and their effective config, resolved
// only through wire's Effective* functions from the registry (SPEC §7). Registry values that do
// not decode are skipped (docs/hostile-agents.md "Reply subjects are the requester's"). Every
// profile holds the two reads it makes (SPEC Appendix B). Both are asked again when an answer
// is lost (retryRead), as it is while a cluster's stream elects a leader.
func (e *Endpoint) Channels(ctx context.Context) (ChannelList, error) {
	var counts map[string]uint64
	err := retryRead(ctx, readAttempt, func(ctx context.Context) (err error) {
		counts, err = e.chatCounts(ctx)
		return err
	})
	if err != nil {
		return ChannelList{}, err
	}
	var configs map[string]*wire.ChannelConfig
	var defaults *wire.ChannelDefaults
	err = retryRead(ctx, readAttempt, func(ctx context.Context) (err error) {
		configs, defaults, err = e.registry(ctx)
		return err
	})
	if err != nil {
		return ChannelList{}, err
	}
	names := make(map[string]bool, len(counts)+len(configs))
	for ch := range counts {
		names[ch] = true
	}
	for ch := range configs {
		names[ch] = true
	}
	list := ChannelList{Defaults: defaults, Channels: make([]ChannelInfo, 0, len(names))}
	for ch := range names {
		c := configs[ch]
		list.Channels = append(list.Channels, ChannelInfo{Name: ch, Messages: counts[ch], Config: c,
			Class: wire.EffectiveClass(c, defaults), Replay: wire.EffectiveReplay(c, defaults),
			ReplayWindow: wire.EffectiveReplayWindow(c, defaults)})
	}
	slices.SortFunc(list.Channels, func(a, b ChannelInfo) int { return strings.Compare(a.Name, b.Name) })
	return list, nil
}

// chatCounts maps every channel with retained messages to their number.
func (e *Endpoint) chatCounts(ctx context.Context) (map[string]uint64, error) {
	stream := e.names.ChatStream()
	ctx, stop := e.violations.watch(ctx, opPublish, "$JS.API.STREAM.INFO."+stream, ErrReadRefused)
	defer stop()
	s, err := e.js.Stream(ctx, stream)
	if err != nil {
		return nil, fmt.Errorf("read the channels of %s: %w", stream, refusal(ctx, err))
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(e.names.ChatFilter(">")))
	if err != nil {
		return nil, fmt.Errorf("read the channels of %s: %w", stream, refusal(ctx, err))
	}
	out := map[string]uint64{}
	for subject, n := range info.State.Subjects {
		if sub, err := wire.ParseSubject(subject); err == nil && sub.Kind == wire.KindChat {
			out[sub.Rest] += n
		}
	}
	return out, nil
}

// registry reads every channel's config and the space defaults from the channel registry.
func (e *Endpoint) registry(ctx context.Context) (map[string]*wire.ChannelConfig, *wire.ChannelDefaults, error) {
	w, err := e.channelsKV.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, nil, fmt.Errorf("read the channel registry %s: %w", e.names.ChannelsBucket(), err)
	}
	defer func() { _ = w.Stop() }()
	configs := map[string]*wire.ChannelConfig{}
	var defaults *wire.ChannelDefaults
	for {
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("read the channel registry %s: %w", e.names.ChannelsBucket(), ctx.Err())
		case entry := <-w.Updates():
			if entry == nil {
				return configs, defaults, nil
			}
			if entry.Key() == wire.DefaultsKey {
				defaults, _ = wire.DecodeChannelDefaults(entry.Value())
			} else if c, err := wire.DecodeChannelConfig(entry.Value()); err == nil {
				configs[entry.Key()] = c
			}
		}
	}
}
