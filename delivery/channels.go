package delivery

import (
	"github.com/cotal-go/cotal/endpoint"
)

// channelRow is one value of the channel registry: the space defaults under
// endpoint.DefaultsKey, a channel's config under any other key.
type channelRow struct {
	config   *endpoint.ChannelConfig
	defaults *endpoint.ChannelDefaults
}

// decodeChannelRow decodes a registry value by its key (SPEC §7).
func decodeChannelRow(key string, data []byte) (channelRow, error) {
	if key == endpoint.DefaultsKey {
		d, err := endpoint.DecodeChannelDefaults(data)
		return channelRow{defaults: d}, err
	}
	c, err := endpoint.DecodeChannelConfig(data)
	return channelRow{config: c}, err
}

// classOf resolves the channel's effective delivery class from the cached registry, through
// endpoint.EffectiveClass, the one resolution every path uses (SPEC §7, §12 item 11). channel is
// the sanitized concrete channel, the registry's key.
func classOf(reg *kvCache[channelRow], channel string) endpoint.DeliveryClass {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	return endpoint.EffectiveClass(reg.rows[channel].config, reg.rows[endpoint.DefaultsKey].defaults)
}
