package space

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// TASK_<s> keeps a task for a held role until a worker takes it, so one sender could fill
// the store with tasks for a role whose workers are offline or slow, and every other agent's
// anycast would be refused until they caught up. JetStream has no per-sender limit, so the
// fill check (flood.go) keeps one: while TASK_<s> is past floodFill of its bytes, a sender
// whose pending tasks hold more than taskShare of the store loses its oldest tasks past that
// share, and its connections are closed, named in the log and counted as kind "tasks". An
// honest sender is touched only when it alone holds a quarter of a store more than half full.
//
// The broker tells how many messages a subject holds, not how many bytes, so a sender's
// bytes are estimated: each of its subjects (one per role) as its message count times the
// size of its newest message. A sender that could not reach the share even with messages of
// the largest size a credential may publish is never read.

// taskShare is the share of TASK_<s>'s max_bytes one sender's pending tasks may hold while
// the store is past floodFill.
const taskShare = 0.25

// shareTasks takes back TASK_<s>'s space as the comment at the top of the file says and
// returns how many tasks it deleted.
func (m *Mesh) shareTasks(ctx context.Context, rt *spaceRuntime) (int64, error) {
	rt.taskReclaim.Lock()
	defer rt.taskReclaim.Unlock()
	reclaimed, kept, err := m.reclaimTasks(ctx, rt)
	if err != nil || m.store == nil {
		return reclaimed, err
	}
	st, err := rt.stream(ctx, rt.names.TaskStream())
	if err != nil {
		return reclaimed, fmt.Errorf("open stream %s: %w", rt.names.TaskStream(), err)
	}
	info, err := st.Info(ctx)
	if err != nil || !pastFill(info) {
		return reclaimed, err
	}
	reqs, err := m.tasksPastShare(ctx, rt, st, kept, int64(taskShare*float64(info.Config.MaxBytes)))
	var tally senderTally
	purged, perr := rt.purge(ctx, rt.names.TaskStream(), reqs, &tally)
	m.closeFlooders(rt, "tasks", &tally, func(string, int64) bool { return true },
		"closed the connections of an agent whose pending tasks held more than a quarter of a task store past half full")
	if purged > 0 {
		rt.reconciled.purgedTasks.Add(purged)
		m.log.Warn("deleted the oldest tasks of senders past their share of a task store past half full",
			"space", rt.name, "purged", purged, "senders", m.topSenders(rt.name, &tally))
	}
	if err = errors.Join(err, perr); err != nil {
		return reclaimed + purged, fmt.Errorf("share the task store of %s: %w", rt.name, err)
	}
	return reclaimed + purged, nil
}

// tasksPastShare returns one purge per sender of senders whose estimated task bytes exceed
// share, keeping its newest tasks within it.
func (m *Mesh) tasksPastShare(ctx context.Context, rt *spaceRuntime, st jetstream.Stream, senders taskSubjects, share int64) ([]purgeRequest, error) {
	prefix := rt.names.Prefix() + ".svc."
	var reqs []purgeRequest
	for sender, subjects := range senders {
		var count uint64
		for _, n := range subjects {
			count += n
		}
		if int64(count)*int64(m.opts.Limits.Payload) <= share {
			continue
		}
		bytes, err := estimateBytes(ctx, st, subjects)
		if err != nil {
			return reqs, err
		}
		if bytes > share {
			keep := uint64(float64(count) * float64(share) / float64(bytes))
			reqs = append(reqs, purgeRequest{Filter: prefix + "*." + sender, Keep: max(keep, 1), sender: sender})
		}
	}
	return reqs, nil
}

// estimateBytes is the bytes of subjects' messages, each subject's counted as its message
// count times the size of its newest message.
func estimateBytes(ctx context.Context, st jetstream.Stream, subjects map[string]uint64) (int64, error) {
	var total int64
	for subject, n := range subjects {
		msg, err := st.GetLastMsgForSubject(ctx, subject)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // taken by a worker meanwhile
		}
		if err != nil {
			return total, fmt.Errorf("read the newest task of %s: %w", subject, err)
		}
		size := len(msg.Subject) + len(msg.Data)
		for k, vs := range msg.Header {
			for _, v := range vs {
				size += len(k) + len(v) + 4
			}
		}
		total += int64(n) * int64(size)
	}
	return total, nil
}
