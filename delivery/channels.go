package delivery

import (
	"github.com/cotal-go/cotal/wire"
)

// channelRow is one value of the channel registry: the space defaults under
// wire.DefaultsKey, a channel's config under any other key.
type channelRow struct {
	config   *wire.ChannelConfig
	defaults *wire.ChannelDefaults
}

// decodeChannelRow decodes a registry value by its key (SPEC §7).
func decodeChannelRow(key string, data []byte) (channelRow, error) {
	if key == wire.DefaultsKey {
		d, err := wire.DecodeChannelDefaults(data)
		return channelRow{defaults: d}, err
	}
	c, err := wire.DecodeChannelConfig(data)
	return channelRow{config: c}, err
}

// classOf resolves the channel's effective delivery class from the cached registry, through
// wire.EffectiveClass, the one resolution every path uses (SPEC §7, §12 item 11). channel is
// the sanitized concrete channel, the registry's key.
func classOf(reg *kvCache[channelRow], channel string) wire.DeliveryClass {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	return wire.EffectiveClass(reg.rows[channel].config, reg.rows[wire.DefaultsKey].defaults)
}
