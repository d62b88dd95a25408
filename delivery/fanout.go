package delivery

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/internal/jsconfig"
	"github.com/cotal-go/cotal/wire"
)

// runFanout is the fan-out and, for every copy it can decide, the trusted hand-over (SPEC §4,
// §8, §9 item 5; doc.go). It starts once the membership, channel and presence views are
// loaded, so it never routes a message against a partial view.
func (s *Service) runFanout(ctx context.Context, up func()) error {
	if err := s.waitViews(ctx); err != nil {
		return err
	}
	cons, err := s.js.CreateOrUpdateConsumer(ctx, s.names.ChatStream(), jsconfig.Consumer(s.names.FanoutConsumerSpec()))
	if err != nil {
		return fmt.Errorf("create consumer %s on %s: %w", wire.FanoutConsumer, s.names.ChatStream(), err)
	}
	if err := s.quota.load(ctx, s.js, s.names); err != nil {
		return err
	}
	s.gaps.resume(cons.CachedInfo().Delivered.Stream)
	it, err := cons.Messages(jetstream.PullMaxMessages(pullBatch))
	if err != nil {
		return fmt.Errorf("pull from %s: %w", wire.FanoutConsumer, err)
	}
	defer releaseBuffered(it)
	up()
	for {
		batch, err := nextBatch(ctx, it, pullBatch)
		if err != nil {
			return fmt.Errorf("pull from %s: %w", wire.FanoutConsumer, err)
		}
		if err := s.fanoutBatch(ctx, batch); err != nil {
			return err
		}
	}
}

// waitViews blocks until the membership view is loaded, the channel cache is current and the
// presence cache was loaded once. Presence serves @mention resolution only, so a presence
// cache that is not current (its follow restarting) does not hold durable copies back:
// mentions are resolved on its last known rows, counted and logged (noteStalePresence).
func (s *Service) waitViews(ctx context.Context) error {
	for _, g := range []*gate{s.members.loaded, s.channels.gate, s.presence.loaded} {
		if err := g.wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

// fanoutBatch routes every message of batch and acks each once its copies are stored.
func (s *Service) fanoutBatch(ctx context.Context, batch []jetstream.Msg) error {
	var pend []pendingMsg
	inFlight := 0
	for i, m := range batch {
		// A cache whose watch is restarting is not fresh; wait rather than route on it.
		if err := s.waitViews(ctx); err != nil {
			nakAll(batch[i:])
			return s.settle(ctx, pend, s.fanoutFailed)
		}
		p := s.fanoutOne(ctx, m)
		pend = append(pend, p)
		inFlight += len(p.futures)
		if inFlight >= flushAt {
			if err := s.settle(ctx, pend, s.fanoutFailed); err != nil {
				nakAll(batch[i+1:])
				return err
			}
			pend, inFlight = pend[:0], 0
		}
	}
	return s.settle(ctx, pend, s.fanoutFailed)
}

func (s *Service) fanoutFailed(p pendingMsg, err error) {
	s.log.Warn("fan-out copy not stored; the CHAT message will be redelivered",
		"subject", p.msg.Subject(), "err", err)
}

// fanoutOne validates one CHAT message and starts publishing its copies. A message that is
// not a valid chat delivery is counted and settled with no copies.
func (s *Service) fanoutOne(ctx context.Context, m jetstream.Msg) pendingMsg {
	meta, err := m.Metadata()
	if err != nil {
		s.skip(m, 0, err)
		return pendingMsg{msg: m}
	}
	s.stats.fanoutLag.Store(meta.NumPending)
	if meta.NumDelivered == 1 {
		if gap, found := s.gaps.observe(meta.Sequence.Stream); found {
			s.reportGap(gap)
		}
	}
	seq := meta.Sequence.Stream
	sub, err := wire.ParseSubject(m.Subject())
	if err == nil && sub.Kind != wire.KindChat {
		err = fmt.Errorf("subject kind %s is not chat", sub.Kind)
	}
	if err != nil {
		s.skip(m, seq, err)
		return pendingMsg{msg: m}
	}
	durable := classOf(s.channels, sub.Rest) == wire.DeliveryDurable
	if !durable && !mayMention(m.Data()) {
		// A live message without mentions has no copies (SPEC §4): it is acked undecoded.
		return pendingMsg{msg: m}
	}
	sub, msg, err := wire.CheckDelivery(m.Subject(), m.Data())
	if err != nil {
		s.skip(m, seq, err)
		return pendingMsg{msg: m}
	}
	targets, reason := s.route(sub, msg, durable, seq, meta.Timestamp)
	p := pendingMsg{msg: m}
	c := copyRef{channel: sub.Rest, id: msg.ID, seq: seq, durable: reason == ReasonDurableChannel}
	if waiting := s.handOverAll(ctx, &p, c, m.Data(), targets); p.err == nil && len(waiting) > 0 {
		p.err = s.writeEntries(ctx, &p, c, m.Data(), waiting)
	}
	counter := &s.stats.fannedOutDurable
	if reason == ReasonLiveMention {
		counter = &s.stats.fannedOutMention
	}
	p.onStored = func() { counter.Add(int64(len(targets))) }
	return p
}

// handOverAll hands c to every target whose current read ACL is known, checked now, at the
// hand-over (SPEC §9 item 5): a target the ACL covers gets its DLV copy, one it does not
// gets nothing. Membership was checked when the targets were chosen, under the join fence,
// which is also the hand-over's moment. It returns the targets the hand-over cannot decide
// yet, whose ACL the source does not know or whose join is still being written: their
// copies wait in INBOX for the trusted reader, which decides later.
func (s *Service) handOverAll(ctx context.Context, p *pendingMsg, c copyRef, data []byte, targets []recipient) []recipient {
	var waiting []recipient
	for _, t := range targets {
		c.member = t.id
		acl, known := s.cfg.ACL.ReadACL(t.id)
		switch {
		case !known || t.joining:
			waiting = append(waiting, t)
		case !acl.Covers(c.channel):
			s.dropUnauthorized(c)
		default:
			s.handOver(ctx, p, c, data)
		}
		if p.err != nil {
			return nil
		}
	}
	return waiting
}

// writeEntries starts the INBOX writes of c for targets, once each has room in its backlog.
func (s *Service) writeEntries(ctx context.Context, p *pendingMsg, c copyRef, data []byte, targets []recipient) error {
	if err := s.reserveInbox(ctx, targets); err != nil {
		return err
	}
	reason := ReasonLiveMention
	if c.durable {
		reason = ReasonDurableChannel
	}
	head, err := newEntryHead(data, c.channel, c.seq, reason)
	if err != nil {
		return err
	}
	for _, t := range targets {
		f, err := s.publishEntry(head, c.id, t)
		if err != nil {
			return err
		}
		p.add(f, "")
	}
	return nil
}

// route decides who gets a copy. durable is the channel's class, resolved fresh from the
// channel registry through wire.EffectiveClass (SPEC §7) when the message was read. Durable:
// every eligible member but the sender, decided under the join fence (doc.go). Live: each
// @mention resolving to one present instance whose current read ACL covers the channel
// (SPEC §4).
func (s *Service) route(sub wire.Subject, msg *wire.CotalMessage, durable bool, seq uint64, at time.Time) ([]recipient, string) {
	channel := sub.Rest
	if durable {
		s.members.view.mu.Lock()
		defer s.members.view.mu.Unlock()
		return s.members.view.eligibleLocked(nil, channel, sub.Sender, seq), ReasonDurableChannel
	}
	var out []recipient
	seen := map[string]bool{}
	if len(msg.Mentions) > 0 {
		s.noteStalePresence()
	}
	names, _ := s.cfg.ACL.(NameSource)
	for _, name := range msg.Mentions {
		id, ok := resolveMention(s.presence, names, name, at)
		if !ok || id == sub.Sender || seen[id] {
			continue
		}
		seen[id] = true
		if acl, known := s.cfg.ACL.ReadACL(id); known && acl.Covers(channel) {
			out = append(out, recipient{id: id})
		}
	}
	return out, ReasonLiveMention
}

// noteStalePresence counts a message whose mentions are resolved while the presence cache is
// not current, and logs the first of each such stretch.
func (s *Service) noteStalePresence() {
	if s.presence.gate.isOpen() {
		s.stalePresenceLogged.Store(false)
		return
	}
	s.stats.mentionsStalePresence.Add(1)
	if s.stalePresenceLogged.CompareAndSwap(false, true) {
		s.log.Warn("resolving @mentions on the last known presence rows: the presence cache is not current",
			"loop", LoopPresence)
	}
}

// publishEntry starts the INBOX write of one entry.
func (s *Service) publishEntry(head entryHead, msgID string, t recipient) (jetstream.PubAckFuture, error) {
	return s.js.PublishMsgAsync(&nats.Msg{Subject: s.names.BackstopInboxSubject(t.id), Data: head.entry(t.generation)},
		jetstream.WithMsgID(entryMsgID(msgID, t.id, t.generation)),
		jetstream.WithExpectStream(s.names.InboxStream()))
}

// skip counts and logs a CHAT message that is not a valid chat delivery; it is acked with no
// entries, because no retry can repair it (SPEC §4 permanent anomalies).
func (s *Service) skip(m jetstream.Msg, seq uint64, err error) {
	s.stats.fanoutSkipped.Add(1)
	reason, _ := wire.ReasonOf(err)
	s.log.Warn("fan-out skips a CHAT message that is not a valid chat delivery",
		"subject", m.Subject(), "seq", seq, "reason", reason, "err", err)
}

// reportGap makes a gap visible: counted, logged with its range, and recorded in every
// affected membership, which listMemberships lists.
func (s *Service) reportGap(g wire.SeqRange) {
	if s.members.view.gap(g) {
		s.members.kickFlush()
	}
	s.stats.gaps.Add(1)
	s.stats.gapMessages.Add(int64(g.Last - g.First + 1))
	s.log.Error("CHAT messages were removed before the fan-out read them; durable members miss them",
		"first", g.First, "last", g.Last, "count", g.Last-g.First+1)
}
