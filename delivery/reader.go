package delivery

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/internal/jsconfig"
	"github.com/cotal-go/cotal/wire"
)

// runReader is the trusted reader (SPEC §8, §9 item 5): it re-authorizes every INBOX entry
// against the member's current read ACL and membership interval, and hands what passes to the
// member's DLV subject, acking the entry only once that copy is stored.
func (s *Service) runReader(ctx context.Context, up func()) error {
	if err := s.members.loaded.wait(ctx); err != nil {
		return err
	}
	cons, err := s.js.CreateOrUpdateConsumer(ctx, s.names.InboxStream(), jsconfig.Consumer(s.names.ReaderConsumerSpec()))
	if err != nil {
		return fmt.Errorf("create consumer %s on %s: %w", wire.ReaderConsumer, s.names.InboxStream(), err)
	}
	if err := s.room.load(ctx, s.js, s.names); err != nil {
		return err
	}
	info := cons.CachedInfo()
	s.inGaps.resume(info.Delivered.Stream)
	it, err := cons.Messages(jetstream.PullMaxMessages(pullBatch))
	if err != nil {
		return fmt.Errorf("pull from %s: %w", wire.ReaderConsumer, err)
	}
	defer releaseBuffered(it)
	up()
	for {
		batch, err := nextBatch(ctx, it, pullBatch)
		if err != nil {
			return fmt.Errorf("pull from %s: %w", wire.ReaderConsumer, err)
		}
		if err := s.readBatch(ctx, batch); err != nil {
			return err
		}
	}
}

// readBatch handles every entry of batch.
func (s *Service) readBatch(ctx context.Context, batch []jetstream.Msg) error {
	var pend []pendingMsg
	flush := func() error {
		err := settle(ctx, pend, s.handoffFailed)
		pend = pend[:0]
		return err
	}
	for i, m := range batch {
		if p, ok := s.readOne(ctx, m, flush); ok {
			pend = append(pend, p)
		}
		if len(pend) >= flushAt {
			if err := flush(); err != nil {
				nakAll(batch[i+1:])
				return err
			}
		}
	}
	return flush()
}

func (s *Service) handoffFailed(p pendingMsg, err error) {
	s.log.Warn("DLV copy not stored; the entry will be redelivered", "subject", p.msg.Subject(), "err", err)
}

// readOne re-authorizes one entry. It settles refused entries itself and returns the pending
// handoff of an authorized one. flush settles the handoffs pending so far.
func (s *Service) readOne(ctx context.Context, m jetstream.Msg, flush func() error) (pendingMsg, bool) {
	meta, err := m.Metadata()
	if err != nil {
		s.malformed(m, err)
		return pendingMsg{}, false
	}
	s.stats.readerLag.Store(meta.NumPending)
	if meta.NumDelivered == 1 {
		if gap, found := s.inGaps.observe(meta.Sequence.Stream); found {
			s.stats.readerGaps.Add(1)
			s.stats.readerGapEntries.Add(int64(gap.Last - gap.First + 1))
			s.log.Error("INBOX entries were removed before the reader read them; their members miss them",
				"first", gap.First, "last", gap.Last, "count", gap.Last-gap.First+1)
		}
	}
	member, ok := strings.CutPrefix(m.Subject(), s.names.Prefix()+".dinbox.")
	if ok && meta.NumDelivered == 1 {
		s.backlog.taken(member)
	}
	if !ok || member == "" || wire.Sanitize(member) != member {
		s.malformed(m, fmt.Errorf("subject %q is not %s.dinbox.<member>", m.Subject(), s.names.Prefix()))
		return pendingMsg{}, false
	}
	e, msg, err := decodeEntry(m.Data())
	if err != nil {
		s.malformed(m, err)
		return pendingMsg{}, false
	}
	acl, known := s.cfg.ACL.ReadACL(member)
	switch {
	case !known:
		s.unknownMember(m, meta, member, msg.ID)
		return pendingMsg{}, false
	case !acl.Covers(e.Channel):
		s.stats.droppedUnauthorized.Add(1)
		s.log.Info("dropping a backstop entry outside the member's read ACL",
			"member", member, "channel", e.Channel, "id", msg.ID)
		_ = m.Ack()
		return pendingMsg{}, false
	case e.Reason == ReasonDurableChannel && !s.members.view.authorizes(e.Channel, member, e.Generation, e.Seq):
		s.stats.droppedNotEligible.Add(1)
		s.log.Info("dropping a backstop entry outside the member's membership interval",
			"member", member, "channel", e.Channel, "seq", e.Seq, "generation", e.Generation, "id", msg.ID)
		_ = m.Ack()
		return pendingMsg{}, false
	}
	if !s.hasRoom(ctx, member, flush) {
		s.handoffFull(m, member, e, msg.ID)
		return pendingMsg{}, false
	}
	f, err := s.js.PublishMsgAsync(&nats.Msg{Subject: s.names.DLVSubject(member), Data: e.Msg},
		jetstream.WithMsgID(dlvMsgID(msg.ID, member)), jetstream.WithExpectStream(s.names.DLVStream()))
	p := pendingMsg{msg: m, err: err, onStored: func(acks []*jetstream.PubAck) {
		s.stats.delivered.Add(1)
		for _, a := range acks {
			s.room.handed(member, a.Sequence)
		}
	}}
	if err == nil {
		p.futures = []jetstream.PubAckFuture{f}
	}
	return p, true
}

// hasRoom reports whether member's DLV subject takes one more copy without evicting one the
// member has not acknowledged. When it must ask the member's consumer, the handoffs in flight
// are settled first so that the answer counts them.
func (s *Service) hasRoom(ctx context.Context, member string, flush func() error) bool {
	ok, err := s.room.admit(member, func() (handoffState, error) {
		if err := flush(); err != nil {
			return handoffState{}, err
		}
		return s.handoffState(ctx, member)
	})
	if err != nil && s.room.shouldLog(member, time.Now()) {
		s.log.Warn("cannot count a member's unacknowledged durable copies; handing copies over anyway",
			"member", member, "err", err)
	}
	return ok
}

// handoffFull reports a copy refused because member's handoff is full (issue 12 item 9): it
// is counted, recorded as a gap of the membership it was written for and acked, so the loss
// is reported once instead of retried against a backlog that may never drain.
func (s *Service) handoffFull(m jetstream.Msg, member string, e *entry, id string) {
	s.stats.droppedFull.Add(1)
	s.members.view.refused(e.Channel, member, e.Seq, e.Reason == ReasonDurableChannel)
	s.members.kickFlush()
	if s.room.shouldLog(member, time.Now()) {
		s.log.Error("a member's durable handoff is full of unacknowledged copies; dropping new copies as gaps",
			"member", member, "channel", e.Channel, "seq", e.Seq, "id", id)
	}
	_ = m.Ack()
}

// unknownMember retries an entry whose member the ACL source does not know yet, and gives up,
// loudly, after Config.UnknownMemberRetries deliveries.
func (s *Service) unknownMember(m jetstream.Msg, meta *jetstream.MsgMetadata, member, id string) {
	if meta.NumDelivered < uint64(s.cfg.UnknownMemberRetries) {
		_ = m.NakWithDelay(s.cfg.UnknownMemberDelay)
		return
	}
	s.stats.gaveUpUnknown.Add(1)
	s.log.Error("giving up on a backstop entry: its member is unknown to the ACL registry",
		"member", member, "id", id, "deliveries", meta.NumDelivered)
	_ = m.Term()
}

// malformed terminates an INBOX value that is not a valid entry; no retry can repair it.
func (s *Service) malformed(m jetstream.Msg, err error) {
	s.stats.readerMalformed.Add(1)
	s.log.Warn("terminating an INBOX value that is not a valid backstop entry", "subject", m.Subject(), "err", err)
	_ = m.Term()
}
