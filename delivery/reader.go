package delivery

import (
	"context"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/internal/jsconfig"
	"github.com/cotal-go/cotal/wire"
)

// runReader is the trusted reader (SPEC §8, §9 item 5) of the copies the fan-out could not
// decide (doc.go): it re-authorizes every INBOX entry against the member's current read ACL
// and membership interval, and hands what passes to the member's DLV subject, acking the entry
// only once that copy is stored.
func (s *Service) runReader(ctx context.Context, up func()) error {
	if err := s.members.loaded.wait(ctx); err != nil {
		return err
	}
	cons, err := s.js.CreateOrUpdateConsumer(ctx, s.names.InboxStream(), jsconfig.Consumer(s.names.ReaderConsumerSpec()))
	if err != nil {
		return fmt.Errorf("create consumer %s on %s: %w", wire.ReaderConsumer, s.names.InboxStream(), err)
	}
	if err := s.quota.load(ctx, s.js, s.names); err != nil {
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
	for i, m := range batch {
		if p, ok := s.readOne(ctx, m); ok {
			pend = append(pend, p)
		}
		if len(pend) >= flushAt {
			if err := s.settle(ctx, pend, s.handoffFailed); err != nil {
				nakAll(batch[i+1:])
				return err
			}
			pend = pend[:0]
		}
	}
	return s.settle(ctx, pend, s.handoffFailed)
}

func (s *Service) handoffFailed(p pendingMsg, err error) {
	s.log.Warn("DLV copy not stored; the entry will be redelivered", "subject", p.msg.Subject(), "err", err)
}

// readOne re-authorizes one entry. It settles refused entries itself and returns the pending
// handoff of an authorized one.
func (s *Service) readOne(ctx context.Context, m jetstream.Msg) (pendingMsg, bool) {
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
	c := copyRef{member: member, channel: e.Channel, id: msg.ID, seq: e.Seq, durable: e.Reason == ReasonDurableChannel}
	acl, known := s.cfg.ACL.ReadACL(member)
	switch {
	case !known:
		s.unknownMember(m, meta, member, msg.ID)
		return pendingMsg{}, false
	case !acl.Covers(e.Channel):
		s.dropUnauthorized(c)
		_ = m.Ack()
		return pendingMsg{}, false
	case c.durable && s.members.view.joining(e.Channel, member, e.Generation):
		_ = m.NakWithDelay(joinWait) // the join may still be rolled back; decide once it is written
		return pendingMsg{}, false
	case c.durable && !s.members.view.authorizes(e.Channel, member, e.Generation, e.Seq):
		s.stats.droppedNotEligible.Add(1)
		s.log.Info("dropping a backstop entry outside the member's membership interval",
			"member", member, "channel", e.Channel, "seq", e.Seq, "generation", e.Generation, "id", msg.ID)
		_ = m.Ack()
		return pendingMsg{}, false
	}
	p := pendingMsg{msg: m}
	s.handOver(ctx, &p, c, e.Msg)
	return p, true
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
