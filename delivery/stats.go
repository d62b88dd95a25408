package delivery

import "sync/atomic"

// Stats is a snapshot of the Service's counters since Start. Nothing the backstop drops is
// dropped silently: every drop has a counter here and a log line.
type Stats struct {
	// FannedOutDurable counts durable channels' copies the fan-out routed to members: handed
	// over to DLV, refused there (below), or written to INBOX for the reader.
	FannedOutDurable int64 `json:"fannedOutDurable"`
	// FannedOutMention counts the same for @mentions on live channels.
	FannedOutMention int64 `json:"fannedOutMention"`
	// FanoutSkipped counts CHAT messages that are not valid chat deliveries, acked unprocessed.
	FanoutSkipped int64 `json:"fanoutSkipped"`
	// GapsDetected counts jumps in the CHAT sequence the fan-out consumed: messages retention
	// evicted before the fan-out read them (docs/durable.md "Gaps and losses").
	GapsDetected int64 `json:"gapsDetected"`
	// GapMessages counts the CHAT sequences inside those gaps.
	GapMessages int64 `json:"gapMessages"`

	// ReaderDelivered counts copies stored on members' DLV subjects, by the fan-out or the
	// reader (the name predates the fan-out's own hand-over).
	ReaderDelivered int64 `json:"readerDelivered"`
	// ReaderDroppedUnauthorized counts copies whose channel the member's read ACL did not cover
	// at the hand-over (SPEC §9 item 5).
	ReaderDroppedUnauthorized int64 `json:"readerDroppedUnauthorized"`
	// ReaderDroppedNotEligible counts durable-channel entries outside the member's membership
	// interval, such as after a leave (SPEC §7).
	ReaderDroppedNotEligible int64 `json:"readerDroppedNotEligible"`
	// ReaderDroppedFull counts copies refused because the member's DLV subject already held its
	// max_msgs_per_subject unacknowledged copies (docs/durable.md "DLV hand-over"): handing one
	// more over would have evicted the oldest copy unread. Each is a gap of the member's
	// membership.
	ReaderDroppedFull int64 `json:"readerDroppedFull"`
	// ReaderGaveUpUnknown counts entries terminated after Config.UnknownMemberRetries deliveries
	// because the ACL source did not know the member.
	ReaderGaveUpUnknown int64 `json:"readerGaveUpUnknown"`
	// ReaderGaps counts jumps in the INBOX sequence the reader consumed: entries removed
	// before it read them. The fan-out's backpressure is meant to keep this at zero.
	ReaderGaps int64 `json:"readerGaps"`
	// ReaderGapEntries counts the INBOX sequences inside those jumps.
	ReaderGapEntries int64 `json:"readerGapEntries"`
	// ReaderMalformed counts INBOX values that are not valid entries, terminated.
	ReaderMalformed int64 `json:"readerMalformed"`

	// ControlRefusedReplySubject counts control requests dropped unanswered because their reply
	// subject was outside the request subject's .reply. subtree (docs/storage.md "Control
	// service").
	ControlRefusedReplySubject int64 `json:"controlRefusedReplySubject"`
	// ControlRefusedBusy counts control requests answered at once with ReasonControlBusy or
	// ReasonControlSenderBusy instead of being served.
	ControlRefusedBusy int64 `json:"controlRefusedBusy"`
	// ControlDuplicates counts control requests dropped as a second copy of one already
	// admitted (same sender and wire.RequestIDHeader).
	ControlDuplicates int64 `json:"controlDuplicates"`
	// MentionsStalePresence counts CHAT messages whose @mentions were resolved on the last
	// known presence rows because the presence cache was not current (its follow restarting).
	MentionsStalePresence int64 `json:"mentionsStalePresence"`
	// RegistryInvalid counts registry values (members, channels, presence) that did not decode.
	RegistryInvalid int64 `json:"registryInvalid"`
	// RegistryRepairs counts membership records rewritten after someone else wrote their key.
	RegistryRepairs int64 `json:"registryRepairs"`

	// Restarts counts loop restarts by the supervisor.
	Restarts int64 `json:"restarts"`
	// FanoutLag is how many CHAT messages were still pending behind the last one fanned out.
	FanoutLag uint64 `json:"fanoutLag"`
	// ReaderLag is how many INBOX entries were still pending behind the last one read.
	ReaderLag uint64 `json:"readerLag"`
}

// counters are the live values behind Stats.
type counters struct {
	fannedOutDurable, fannedOutMention, fanoutSkipped, gaps, gapMessages               atomic.Int64
	delivered, droppedUnauthorized, droppedNotEligible, gaveUpUnknown, readerMalformed atomic.Int64
	droppedFull                                                                        atomic.Int64
	readerGaps, readerGapEntries                                                       atomic.Int64
	refusedReply, refusedBusy, registryInvalid, registryRepairs                        atomic.Int64
	controlDuplicates, mentionsStalePresence                                           atomic.Int64
	fanoutLag, readerLag                                                               atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{
		FannedOutDurable: c.fannedOutDurable.Load(), FannedOutMention: c.fannedOutMention.Load(),
		FanoutSkipped: c.fanoutSkipped.Load(), GapsDetected: c.gaps.Load(), GapMessages: c.gapMessages.Load(),
		ReaderDelivered: c.delivered.Load(), ReaderDroppedUnauthorized: c.droppedUnauthorized.Load(),
		ReaderDroppedNotEligible: c.droppedNotEligible.Load(), ReaderGaveUpUnknown: c.gaveUpUnknown.Load(),
		ReaderDroppedFull: c.droppedFull.Load(),
		ReaderGaps:        c.readerGaps.Load(), ReaderGapEntries: c.readerGapEntries.Load(),
		ReaderMalformed: c.readerMalformed.Load(), ControlRefusedReplySubject: c.refusedReply.Load(),
		ControlRefusedBusy: c.refusedBusy.Load(), ControlDuplicates: c.controlDuplicates.Load(),
		MentionsStalePresence: c.mentionsStalePresence.Load(),
		RegistryInvalid:       c.registryInvalid.Load(), RegistryRepairs: c.registryRepairs.Load(),
		FanoutLag: c.fanoutLag.Load(), ReaderLag: c.readerLag.Load(),
	}
}
