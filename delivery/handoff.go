package delivery

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// copyRef names one copy on its way to a member: what the hand-over and its reports need.
type copyRef struct {
	member, channel, id string
	seq                 uint64 // the message's CHAT sequence
	durable             bool   // a durable channel's copy; otherwise a live channel's @mention
}

// handOver starts handing one authorized copy to its member's DLV subject (SPEC §8, §9 item 5;
// docs/durable.md "DLV hand-over"): data is the message as its sender published it, and the
// Nats-Msg-Id <id>:<member> makes a hand-over redone after a crash or a redelivery a duplicate
// DLV drops. A member whose handoff is full gets no copy; the refusal is reported as a gap
// instead (handoffFull). The publish joins p, which is acked only once it is stored.
func (s *Service) handOver(ctx context.Context, p *pendingMsg, c copyRef, data []byte) {
	if !s.hasRoom(ctx, c.member) {
		s.handoffFull(c)
		return
	}
	f, err := s.js.PublishMsgAsync(&nats.Msg{Subject: s.names.DLVSubject(c.member), Data: data},
		jetstream.WithMsgID(dlvMsgID(c.id, c.member)), jetstream.WithExpectStream(s.names.DLVStream()))
	if err != nil {
		s.quota.settled(c.member, 0)
		p.err = err
		return
	}
	p.add(f, c.member)
}

// hasRoom reports whether member's DLV subject takes one more copy without evicting one the
// member has not acknowledged (handoffquota.go).
func (s *Service) hasRoom(ctx context.Context, member string) bool {
	ok, err := s.quota.admit(member, func() (handoffState, error) { return s.handoffState(ctx, member) })
	if err != nil && s.quota.shouldLog(member, time.Now()) {
		s.log.Warn("cannot count a member's unacknowledged durable copies; handing copies over anyway",
			"member", member, "err", err)
	}
	return ok
}

// handoffFull reports a copy refused because its member's handoff is full (docs/durable.md
// "Gaps and losses"): it is counted and recorded as a gap of the membership it was meant for,
// so the loss is reported once instead of retried against a backlog that may never drain.
func (s *Service) handoffFull(c copyRef) {
	s.stats.droppedFull.Add(1)
	s.members.view.refused(c.channel, c.member, c.seq, c.durable)
	s.members.kickFlush()
	if s.quota.shouldLog(c.member, time.Now()) {
		s.log.Error("a member's durable handoff is full of unacknowledged copies; dropping new copies as gaps",
			"member", c.member, "channel", c.channel, "seq", c.seq, "id", c.id)
	}
}

// dropUnauthorized reports a copy whose channel its member's current read ACL does not cover
// (SPEC §9 items 5, 6): it is never handed over.
func (s *Service) dropUnauthorized(c copyRef) {
	s.stats.droppedUnauthorized.Add(1)
	s.log.Info("dropping a durable copy outside the member's read ACL",
		"member", c.member, "channel", c.channel, "id", c.id)
}
