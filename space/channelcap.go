package space

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
)

// A post on a channel no one has used before makes the channel: its subject in CHAT_<s> is
// new, and every listing of channels (the console's, `cotal channels`) grows by one. One agent
// with a wide allow_publish (team.>) can make tens of thousands in seconds. So each identity's
// posts may sit on at most Limits.ChannelsPerIdentity channels; the pass deletes a sender's
// posts on the channels past that count, keeping first the channels other senders also post
// on, then the others by name, and closes the sender's connections, naming it in the log and
// in cotal_flooders_closed_total{kind="channels"}.

// DefaultChannelsPerIdentity is Limits.ChannelsPerIdentity's default: far more channels than
// one agent takes part in, far fewer than a listing can show in a page or two.
const DefaultChannelsPerIdentity = 1000

// capChannels deletes, for each sender on more than the limit's channels, its posts on the
// channels past it, and returns how many posts it deleted.
func (m *Mesh) capChannels(ctx context.Context, rt *spaceRuntime) (int64, error) {
	limit := m.opts.Limits.ChannelsPerIdentity
	if m.store == nil || limit <= 0 {
		return 0, nil
	}
	prefix := rt.names.Prefix() + ".chat."
	bySender, senders := map[string][]string{}, map[string]int{}
	err := rt.streamSubjects(ctx, rt.names.ChatStream(), prefix+">", func(page map[string]uint64) (int, error) {
		for subject := range page {
			sender, channel, _ := strings.Cut(strings.TrimPrefix(subject, prefix), ".")
			bySender[sender] = append(bySender[sender], channel)
			senders[channel]++
		}
		return len(page), nil
	})
	if err != nil {
		return 0, fmt.Errorf("cap the channels of %s: %w", rt.name, err)
	}
	var tally senderTally
	var reqs []purgeRequest
	for sender, channels := range bySender {
		if len(channels) <= limit {
			continue
		}
		alone := func(channel string) int { return min(1, max(0, 2-senders[channel])) } // 0 when shared
		slices.SortFunc(channels, func(a, b string) int {
			return cmp.Or(cmp.Compare(alone(a), alone(b)), strings.Compare(a, b))
		})
		for _, channel := range channels[limit:] {
			reqs = append(reqs, purgeRequest{Filter: prefix + sender + "." + channel, sender: sender})
		}
	}
	if len(reqs) == 0 {
		return 0, nil
	}
	purged, err := rt.purge(ctx, rt.names.ChatStream(), reqs, &tally)
	m.closeFlooders(rt, "channels", &tally, func(id string, n int64) bool { return len(bySender[id]) > limit },
		"closed the connections of an agent that posted on more channels than limits.channels_per_identity; its posts on the channels past it are deleted")
	if err != nil {
		return purged, fmt.Errorf("cap the channels of %s: %w", rt.name, err)
	}
	return purged, nil
}
