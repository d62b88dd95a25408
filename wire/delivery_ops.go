package wire

// The ops of the delivery control service (docs/storage.md "Control service"), sent as
// ControlRequest.Op on cotal.<s>.ctl.delivery.<sender>. The server and the client take the
// names, arguments and replies from here, so the two cannot drift apart.
const (
	// OpDurableJoin asks for durable membership of a channel (SPEC §7); args DurableJoinArgs,
	// reply data DurableJoinReply.
	OpDurableJoin = "durableJoin"
	// OpDurableLeave ends one durable membership; args DurableLeaveArgs, reply data
	// DurableLeaveReply.
	OpDurableLeave = "durableLeave"
	// OpListMemberships lists the caller's active memberships; args {}, reply data
	// ListMembershipsReply.
	OpListMemberships = "listMemberships"
)

// DurableJoinArgs are the args of a durableJoin request: the concrete channel to join.
type DurableJoinArgs struct {
	Channel string `json:"channel"`
}

// DurableJoinReply is the data of a durableJoin reply: Durable true with the membership's
// Generation, or false with the Reason the backstop was not established (SPEC §7: the caller
// then reports "joined live" with the backstop unestablished).
type DurableJoinReply struct {
	Durable    bool   `json:"durable"`
	Reason     string `json:"reason,omitempty"`
	Generation uint64 `json:"generation,omitempty"`
}

// DurableLeaveArgs are the args of a durableLeave request: the channel and the generation of
// the membership to end.
type DurableLeaveArgs struct {
	Channel    string `json:"channel"`
	Generation uint64 `json:"generation"`
}

// DurableLeaveReply is the data of a durableLeave reply; AlreadyLeft is true when there was no
// such active membership.
type DurableLeaveReply struct {
	Channel     string `json:"channel"`
	AlreadyLeft bool   `json:"alreadyLeft,omitempty"`
}

// ListMembershipsReply is the data of a listMemberships reply; Memberships is never null.
type ListMembershipsReply struct {
	Memberships []MembershipInfo `json:"memberships"`
}

// MembershipInfo is one active membership in a listMemberships reply. Gaps, a cotal addition,
// lists the CHAT sequence ranges removed before the fan-out read them that overlap the
// membership: messages the member may have missed (docs/durable.md "Gaps and losses").
type MembershipInfo struct {
	Channel    string     `json:"channel"`
	Generation uint64     `json:"generation"`
	Activated  bool       `json:"activated"`
	Gaps       []SeqRange `json:"gaps,omitempty"`
}

// SeqRange is an inclusive range of CHAT stream sequences.
type SeqRange struct {
	First uint64 `json:"first"`
	Last  uint64 `json:"last"`
}
