package delivery

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cotal-go/cotal/wire"
)

// Reasons of a durableJoin that did not establish the backstop.
const (
	// ReasonChannelLive: the channel's effective class is live (SPEC §4, §7).
	ReasonChannelLive = "channel is live"
	// reasonUnavailable prefixes the name of the loop that is down.
	reasonUnavailable = "durable delivery is unavailable: "
)

// durableJoin establishes the caller's durable membership of a channel (SPEC §7).
func (s *Service) durableJoin(ctx context.Context, sender string, raw json.RawMessage) (wire.DurableJoinReply, error) {
	var a wire.DurableJoinArgs
	if err := decodeArgs(raw, &a); err != nil {
		return wire.DurableJoinReply{}, err
	}
	refuse := func(format string, args ...any) (wire.DurableJoinReply, error) {
		return wire.DurableJoinReply{Reason: fmt.Sprintf(format, args...)}, nil
	}
	if err := wire.ValidatePublishChannel(a.Channel); err != nil {
		return refuse("%v", err)
	}
	channel := wire.SanitizeChannel(a.Channel)
	for _, name := range []string{LoopFanout, LoopReader, LoopChannels} {
		if s.sup.isDown(name) {
			return refuse("%s%s is down", reasonUnavailable, name)
		}
	}
	acl, known := s.cfg.ACL.ReadACL(sender)
	switch {
	case !known:
		return refuse("instance %s is unknown to the ACL registry", sender)
	case !acl.Covers(channel):
		return refuse("channel %q is outside the caller's read ACL (allowSubscribe)", channel)
	case classOf(s.channels, channel) == wire.DeliveryLive:
		return refuse(ReasonChannelLive)
	}
	rec, err := s.members.join(ctx, channel, sender)
	if err != nil {
		s.log.Error("durable join failed", "member", sender, "channel", channel, "err", err)
		return refuse("the membership registry write failed; try again")
	}
	s.log.Info("joined a durable channel", "member", sender, "channel", channel, "generation", rec.Generation)
	return wire.DurableJoinReply{Durable: true, Generation: rec.Generation}, nil
}

// durableLeave sets the leave cursor of the caller's membership (SPEC §7).
func (s *Service) durableLeave(ctx context.Context, sender string, raw json.RawMessage) (wire.DurableLeaveReply, error) {
	var a wire.DurableLeaveArgs
	if err := decodeArgs(raw, &a); err != nil {
		return wire.DurableLeaveReply{}, err
	}
	if err := wire.ValidatePublishChannel(a.Channel); err != nil {
		return wire.DurableLeaveReply{}, err
	}
	left, err := s.members.leave(ctx, wire.SanitizeChannel(a.Channel), sender, a.Generation)
	if err != nil {
		s.log.Error("durable leave failed", "member", sender, "channel", a.Channel, "err", err)
		return wire.DurableLeaveReply{}, fmt.Errorf("the membership registry write failed; try again")
	}
	if left {
		s.log.Info("left a durable channel", "member", sender, "channel", a.Channel)
	}
	return wire.DurableLeaveReply{Channel: a.Channel, AlreadyLeft: !left}, nil
}

// listMemberships lists the caller's active memberships with the gaps that affect them: CHAT
// sequences evicted before the fan-out read them and the copies refused because the caller's
// handoff was full, oldest first.
func (s *Service) listMemberships(sender string) wire.ListMembershipsReply {
	out := wire.ListMembershipsReply{Memberships: []wire.MembershipInfo{}}
	for _, rec := range s.members.view.active(sender) {
		out.Memberships = append(out.Memberships, wire.MembershipInfo{
			Channel: rec.Channel, Generation: rec.Generation, Activated: rec.Activated,
			Gaps: s.members.view.gapsOf(rec),
		})
	}
	return out
}
