package space

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/wire"
)

// ChannelUpdate changes fields of a channel's registry entry in cotal_channels_<s> (SPEC §7);
// a nil field keeps its current value. For the space defaults only Replay, ReplayWindow and
// DeliveryClass apply.
type ChannelUpdate struct {
	Channel       string              `json:"channel,omitempty"`
	Replay        *bool               `json:"replay,omitempty"`
	ReplayWindow  *string             `json:"replayWindow,omitempty"`
	DeliveryClass *wire.DeliveryClass `json:"deliveryClass,omitempty"`
	Description   *string             `json:"description,omitempty"`
	Instructions  *string             `json:"instructions,omitempty"`
	// Create allows configuring a channel that has no retained message and no entry yet.
	// Without it such a channel is refused with ErrUnknownChannel, which catches typos.
	Create bool `json:"create,omitempty"`
}

// Apply sets u's non-nil fields on c, as SetChannel does before validating and writing.
func (u ChannelUpdate) Apply(c *wire.ChannelConfig) {
	if u.Replay != nil {
		c.Replay = u.Replay
	}
	if u.ReplayWindow != nil {
		c.ReplayWindow = *u.ReplayWindow
	}
	if u.DeliveryClass != nil {
		c.DeliveryClass = *u.DeliveryClass
	}
	if u.Description != nil {
		c.Description = *u.Description
	}
	if u.Instructions != nil {
		c.Instructions = *u.Instructions
	}
}

// ErrContended means another writer kept changing a registry entry through every
// compare-and-set attempt; the caller may try again.
var ErrContended = errors.New("another writer kept changing the entry; try again")

// casAttempts bounds the compare-and-set retries of a registry write racing another writer.
const casAttempts = 5

// SetChannel changes a concrete channel's registry entry with the mesh's provisioner identity,
// the only writer of cotal_channels_<s> (SPEC §7, docs/storage.md "Channel registry"), and
// returns the entry as written. The result is validated before it is written; a channel with no
// retained message and no entry is refused unless u.Create is set. Fan-out and joins read the
// new entry from their next message or join on.
func (m *Mesh) SetChannel(ctx context.Context, space string, u ChannelUpdate) (*wire.ChannelConfig, error) {
	rt, err := m.runtime(space)
	if err != nil {
		return nil, err
	}
	if err := wire.ValidatePublishChannel(u.Channel); err != nil {
		return nil, err
	}
	key := wire.SanitizeChannel(u.Channel)
	kv, err := rt.js.KeyValue(ctx, rt.names.ChannelsBucket())
	if err != nil {
		return nil, fmt.Errorf("open channel registry: %w", err)
	}
	var out wire.ChannelConfig
	err = updateKey(ctx, kv, key, func(data []byte, exists bool) ([]byte, error) {
		out = wire.ChannelConfig{}
		if exists {
			// An entry that does not decode (a JetStream reply written onto the key through an
			// injected reply subject, docs/hostile-agents.md "Reply subjects are the
			// requester's") is replaced, never merged.
			if c, err := wire.DecodeChannelConfig(data); err == nil {
				out = *c
			}
		} else if !u.Create {
			if err := rt.requireMessages(ctx, key); err != nil {
				return nil, err
			}
		}
		u.Apply(&out)
		if err := out.Validate(); err != nil {
			return nil, err
		}
		return json.Marshal(out)
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// SetChannelDefaults changes the space defaults under `=defaults` (SPEC §7) and returns them
// as written.
func (m *Mesh) SetChannelDefaults(ctx context.Context, space string, u ChannelUpdate) (*wire.ChannelDefaults, error) {
	rt, err := m.runtime(space)
	if err != nil {
		return nil, err
	}
	if u.Channel != "" || u.Description != nil || u.Instructions != nil {
		return nil, fmt.Errorf("%w: the space defaults hold only replay, replayWindow and deliveryClass", wire.ErrInvalidChannelConfig)
	}
	kv, err := rt.js.KeyValue(ctx, rt.names.ChannelsBucket())
	if err != nil {
		return nil, fmt.Errorf("open channel registry: %w", err)
	}
	var out wire.ChannelDefaults
	err = updateKey(ctx, kv, wire.DefaultsKey, func(data []byte, exists bool) ([]byte, error) {
		out = wire.ChannelDefaults{}
		if exists {
			if d, err := wire.DecodeChannelDefaults(data); err == nil {
				out = *d
			}
		}
		var c wire.ChannelConfig
		u.Apply(&c)
		if u.Replay != nil {
			out.Replay = c.Replay
		}
		if u.ReplayWindow != nil {
			out.ReplayWindow = c.ReplayWindow
		}
		if u.DeliveryClass != nil {
			out.DeliveryClass = c.DeliveryClass
		}
		if err := out.Validate(); err != nil {
			return nil, err
		}
		return json.Marshal(out)
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// updateKey rewrites key with change(current value) by KV compare-and-set, retrying when
// another writer got there first (Create and Update both report a lost race as ErrKeyExists).
func updateKey(ctx context.Context, kv jetstream.KeyValue, key string, change func(data []byte, exists bool) ([]byte, error)) error {
	for range casAttempts {
		entry, err := kv.Get(ctx, key)
		exists := err == nil
		if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) && !errors.Is(err, jetstream.ErrKeyDeleted) {
			return fmt.Errorf("read %s: %w", key, err)
		}
		var data []byte
		var rev uint64
		if exists {
			data, rev = entry.Value(), entry.Revision()
		}
		next, err := change(data, exists)
		if err != nil {
			return err
		}
		if exists {
			_, err = kv.Update(ctx, key, next, rev)
		} else {
			_, err = kv.Create(ctx, key, next)
		}
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("write %s: %w", key, err)
		}
	}
	return fmt.Errorf("write %s: %w", key, ErrContended)
}

// requireMessages refuses a channel with no retained message in CHAT_<s>.
func (rt *spaceRuntime) requireMessages(ctx context.Context, channel string) error {
	info, err := streamInfo(ctx, rt.js, rt.names.ChatStream(), rt.names.ChatFilter(channel))
	if err != nil {
		return err
	}
	if len(info.State.Subjects) == 0 {
		// The caller knows how its user asks for ChannelUpdate.Create (a flag, a checkbox):
		// the mesh's sentence speaks of the channel only.
		return fmt.Errorf("%w %q: space %s has no message on it and no config for it", ErrUnknownChannel, channel, rt.name)
	}
	return nil
}
