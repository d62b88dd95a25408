package space

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/wire"
)

// pruneHandoff deletes from id's durable handoff (its DLV subject) every copy of a channel acl
// does not cover, and returns how many it deleted (docs/durable.md "Narrowing a read ACL").
//
// The trusted reader authorized each copy against the ACL in force when it handed the copy
// over (SPEC §9 item 5), and dlv_<id> is bound by the agent, so a copy of a channel a re-mint
// has since taken away stays readable with raw NATS until it is deleted. Purging the whole
// subject would also take copies the member may still read, which the reader has already
// acknowledged in INBOX and would never hand over again; so each copy is read and only those
// outside acl go, by sequence. A copy that does not decode cannot be shown to be authorized
// and goes too: the client would terminate it anyway (SPEC §5).
//
// Only copies past dlv_<id>'s ack floor are read: an acknowledged copy stays in the stream, but
// no grant of the agent reaches it any more (it binds dlv_<id> and creates no consumer on
// DLV_<s>), and a member that keeps up has few unacknowledged copies, so a re-mint costs a few
// reads instead of one per retained copy.
//
// It runs on the delivery identity's connection: that identity wrote the copies and already
// reads backstop content, while the provisioner identity holds no content grant.
func (rt *spaceRuntime) pruneHandoff(ctx context.Context, id string, acl wire.ACLRecord) (int, error) {
	js, err := jetstream.New(rt.dlvConn)
	if err != nil {
		return 0, err
	}
	st, err := js.Stream(ctx, rt.names.DLVStream())
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", rt.names.DLVStream(), err)
	}
	// The scan ends at the stream's end when it was opened: hand-overs since then were decided
	// under the new ACL, in force before the prune begins (a copy still in flight then is left
	// to the Endpoint's own check), and a member whose copies arrive as fast as they are read
	// one by one would otherwise hold the mint lock for good.
	subject, end, deleted := rt.names.DLVSubject(id), st.CachedInfo().State.LastSeq, 0
	for seq := unackedFrom(ctx, st, rt.names.DLVConsumer(id)); seq <= end; {
		msg, err := st.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) || err == nil && msg.Sequence > end {
			return deleted, nil
		}
		if err != nil {
			return deleted, fmt.Errorf("read the durable handoff of %s: %w", id, err)
		}
		seq = msg.Sequence + 1
		if m, err := wire.DecodeMessage(msg.Data); err == nil && acl.Covers(m.Channel) {
			continue
		}
		if err := st.DeleteMsg(ctx, msg.Sequence); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			return deleted, fmt.Errorf("delete a durable copy of %s: %w", id, err)
		}
		deleted++
	}
	return deleted, nil
}

// unackedFrom is the first stream sequence consumer may still deliver: one past its ack floor,
// or 1 when its state cannot be read (the whole subject is then checked, as before).
func unackedFrom(ctx context.Context, st jetstream.Stream, consumer string) uint64 {
	c, err := st.Consumer(ctx, consumer)
	if err != nil {
		return 1
	}
	info := c.CachedInfo()
	if info == nil {
		return 1
	}
	return info.AckFloor.Stream + 1
}
