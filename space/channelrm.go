package space

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/wire"
)

// ChannelRemoval is what RemoveChannel deleted: the messages CHAT retained on the channel and
// whether it had a registry entry.
type ChannelRemoval struct {
	Channel  string `json:"channel"`
	Messages uint64 `json:"messages"`
	Config   bool   `json:"config"`
}

// RemoveChannel deletes a concrete channel from a space: every message CHAT_<s> retains on it,
// from every sender, and its registry entry in cotal_channels_<s> (SPEC §7), with the mesh's
// provisioner identity. A channel with neither is refused with ErrUnknownChannel. Nothing else
// of the space changes: durable memberships of the channel stay, so a member still joined gets
// what is sent there next, and backstop copies already fanned out are still delivered.
func (m *Mesh) RemoveChannel(ctx context.Context, space, channel string) (*ChannelRemoval, error) {
	rt, err := m.runtime(space)
	if err != nil {
		return nil, err
	}
	if err := wire.ValidatePublishChannel(channel); err != nil {
		return nil, err
	}
	key := wire.SanitizeChannel(channel)
	out := &ChannelRemoval{Channel: key}
	filter := rt.names.ChatFilter(key)
	info, err := streamInfo(ctx, rt.js, rt.names.ChatStream(), filter)
	if err != nil {
		return nil, err
	}
	for _, n := range info.State.Subjects {
		out.Messages += n
	}
	kv, err := rt.js.KeyValue(ctx, rt.names.ChannelsBucket())
	if err != nil {
		return nil, fmt.Errorf("open channel registry: %w", err)
	}
	_, err = kv.Get(ctx, key)
	out.Config = err == nil
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	if out.Messages == 0 && !out.Config {
		return nil, fmt.Errorf("%w %q: space %s has no message on it and no config for it", ErrUnknownChannel, channel, rt.name)
	}
	if out.Messages > 0 {
		s, err := rt.js.Stream(ctx, rt.names.ChatStream())
		if err != nil {
			return nil, fmt.Errorf("stream %s: %w", rt.names.ChatStream(), err)
		}
		if err := s.Purge(ctx, jetstream.WithPurgeSubject(filter)); err != nil {
			return nil, fmt.Errorf("purge %s from %s: %w", filter, rt.names.ChatStream(), err)
		}
	}
	if out.Config {
		if err := kv.Purge(ctx, key); err != nil {
			return nil, fmt.Errorf("delete the registry entry %s: %w", key, err)
		}
	}
	return out, nil
}
