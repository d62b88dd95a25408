package delivery

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cotal-go/cotal/wire"
)

// JoinReply is the data of a durableJoin reply (LAYOUT.md): Durable true with the membership's
// Generation, or false with the Reason the backstop was not established (SPEC §7: the caller
// then reports "joined live" with the backstop unestablished).
type JoinReply struct {
	Durable    bool   `json:"durable"`
	Reason     string `json:"reason,omitempty"`
	Generation uint64 `json:"generation,omitempty"`
}

// LeaveReply is the data of a durableLeave reply (LAYOUT.md); AlreadyLeft is true when there
// was no such active membership.
type LeaveReply struct {
	Channel     string `json:"channel"`
	AlreadyLeft bool   `json:"alreadyLeft,omitempty"`
}

// MembershipInfo is one active membership in a listMemberships reply (LAYOUT.md). Gaps, a
// cotal addition, lists the CHAT sequence ranges removed before the fan-out read them that
// overlap the membership: messages the member may have missed (LAYOUT.md trap "Eviction
// before fan-out").
type MembershipInfo struct {
	Channel    string     `json:"channel"`
	Generation uint64     `json:"generation"`
	Activated  bool       `json:"activated"`
	Gaps       []SeqRange `json:"gaps,omitempty"`
}

// ListReply is the data of a listMemberships reply.
type ListReply struct {
	Memberships []MembershipInfo `json:"memberships"`
}

// Reasons of a durableJoin that did not establish the backstop.
const (
	// ReasonChannelLive: the channel's effective class is live (SPEC §4, §7).
	ReasonChannelLive = "channel is live"
	// reasonUnavailable prefixes the name of the loop that is down.
	reasonUnavailable = "durable delivery is unavailable: "
)

// durableJoin establishes the caller's durable membership of a channel (SPEC §7).
func (s *Service) durableJoin(ctx context.Context, sender string, raw json.RawMessage) (JoinReply, error) {
	var a struct {
		Channel string `json:"channel"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return JoinReply{}, err
	}
	refuse := func(format string, args ...any) (JoinReply, error) {
		return JoinReply{Reason: fmt.Sprintf(format, args...)}, nil
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
	return JoinReply{Durable: true, Generation: rec.Generation}, nil
}

// durableLeave sets the leave cursor of the caller's membership (SPEC §7).
func (s *Service) durableLeave(ctx context.Context, sender string, raw json.RawMessage) (LeaveReply, error) {
	var a struct {
		Channel    string `json:"channel"`
		Generation uint64 `json:"generation"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return LeaveReply{}, err
	}
	if err := wire.ValidatePublishChannel(a.Channel); err != nil {
		return LeaveReply{}, err
	}
	left, err := s.members.leave(ctx, wire.SanitizeChannel(a.Channel), sender, a.Generation)
	if err != nil {
		s.log.Error("durable leave failed", "member", sender, "channel", a.Channel, "err", err)
		return LeaveReply{}, fmt.Errorf("the membership registry write failed; try again")
	}
	return LeaveReply{Channel: a.Channel, AlreadyLeft: !left}, nil
}

// listMemberships lists the caller's active memberships with the gaps that affect them.
func (s *Service) listMemberships(sender string) ListReply {
	out := ListReply{Memberships: []MembershipInfo{}}
	for _, rec := range s.members.view.active(sender) {
		out.Memberships = append(out.Memberships, MembershipInfo{
			Channel: rec.Channel, Generation: rec.Generation, Activated: rec.Activated,
			Gaps: s.gaps.affecting(rec),
		})
	}
	return out
}
