package space

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/wire"
)

// DM_<s> discards new (docs/durable.md "Reclaiming DMs and tasks"): a full DM stream refuses
// the next DM, its sender is told, and no stored DM is ever evicted for room. What the mesh
// takes back instead, in the pass at start, every ReconcileInterval and on Mesh.Reconcile:
//
//   - every DM addressed to an id that is no agent of the space: never issued (made up by a
//     flooder), an observer's or admin's (who read no dm_ queue), or one whose registry row
//     is gone (forgotten after its credential expired, when its dm_ queue went too). A DM is
//     kept for as long as the registry holds an agent row of its recipient, revoked or not.
//   - when the stream still holds more than reclaimFull of its bytes, every DM its recipient
//     has acknowledged on dm_<id> (below the consumer's ack floor): delivered DMs are history
//     (the admin's god view), which the stream keeps only while it has room for waiting ones.
//
// A DM to a real, offline agent is never taken back, so a flood aimed at one real recipient
// fills the stream until that agent reads it or is revoked and forgotten: the others' DMs are
// refused meanwhile, none is lost.
//
// Purging costs one JetStream API request per subject purged, and a flood to made-up ids
// writes one subject per DM. So a sender that DMs no agent at all, the plain flooder, loses
// everything it sent in one request, which stops at the stream's last sequence when the pass
// began: a DM it sends an agent meanwhile is newer and stays. Only the DMs of senders that
// also wrote to a real agent, or that the registry has forgotten, are purged subject by
// subject, reclaimChunk subjects at a time under the space's mint lock with the registry
// read afresh, so no id can become an agent between the decision and the purge. Those
// purges carry no sequence bound: nats-server walks a bounded purge from the subject's first
// message to the bound, which over a flood is quadratic.

// reclaimFull is the share of DM_<s>'s max_bytes above which a pass also deletes DMs their
// recipient has acknowledged.
const reclaimFull = 0.75

// reclaimChunk is how many subjects the pass purges one by one while it holds the space's
// mint lock, so a mint never waits for a whole pass over a flood.
const reclaimChunk = 1000

// reclaimWorkers is how many purge requests a pass has in flight at once.
const reclaimWorkers = 8

// upkeep is the periodic work on a space: the consumer reconciliation, then the DM reclaim,
// the task reclaim and share, and the channel cap. The caller does not hold rt.mintMu; the
// consumer part takes it.
func (m *Mesh) upkeep(ctx context.Context, rt *spaceRuntime) (ReconcileReport, error) {
	rt.mintMu.Lock()
	rep, err := m.reconcile(ctx, rt, passCause{})
	rt.mintMu.Unlock()
	purged, rerr := m.reclaimDMs(ctx, rt)
	tasks, terr := m.shareTasks(ctx, rt)
	posts, cerr := m.capChannels(ctx, rt)
	rt.reconciled.purgedPosts.Add(posts)
	rep.PurgedDMs, rep.PurgedTasks, rep.PurgedPosts = purged, tasks, posts
	return rep, errors.Join(err, rerr, terr, cerr)
}

// reclaimDMs takes back DM_<s>'s space as the comment at the top of the file says and
// returns how many DMs it deleted.
func (m *Mesh) reclaimDMs(ctx context.Context, rt *spaceRuntime) (int64, error) {
	if m.store == nil {
		return 0, nil
	}
	rt.dmReclaim.Lock()
	defer rt.dmReclaim.Unlock()
	n := rt.names
	st, err := rt.stream(ctx, n.DMStream())
	if err != nil {
		return 0, fmt.Errorf("open stream %s: %w", n.DMStream(), err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", n.DMStream(), err)
	}
	if info.State.Msgs == 0 {
		return 0, nil
	}
	agents, err := m.dmRecipients(rt)
	if err != nil {
		return 0, err
	}
	var tally, strangers senderTally
	purged, err := m.purgeStrangers(ctx, rt, agents, info.State.LastSeq+1, &strangers)
	if pastFill(info) {
		m.closeDMFlooders(rt, &strangers)
	}
	tally.merge(&strangers)
	if err == nil {
		if info, err = st.Info(ctx); err == nil && info.Config.MaxBytes > 0 &&
			float64(info.State.Bytes) > reclaimFull*float64(info.Config.MaxBytes) {
			var acked int64
			acked, err = rt.purgeAcknowledged(ctx, st, &tally)
			purged += acked
		}
	}
	if purged > 0 {
		rt.reconciled.purgedDMs.Add(purged)
		m.log.Warn("reclaimed DMs: to ids that are no agent of the space, or already acknowledged while the DM store ran full",
			"space", rt.name, "purged", purged, "senders", m.topSenders(rt.name, &tally))
	}
	if err != nil {
		return purged, fmt.Errorf("reclaim DM space of %s: %w", rt.name, err)
	}
	return purged, nil
}

// purgeStrangers deletes the DMs addressed to no agent: first everything below before of each
// agent (of agents, read after before was) that wrote to no agent, in one request per sender,
// then subject by subject what other senders left.
func (m *Mesh) purgeStrangers(ctx context.Context, rt *spaceRuntime, agents map[string]bool, before uint64, tally *senderTally) (int64, error) {
	prefix := rt.names.Prefix() + ".inst."
	recipient := func(subject string) (to, from string) {
		to, from, _ = strings.Cut(strings.TrimPrefix(subject, prefix), ".")
		return to, from
	}
	// The senders of any DM to an agent, from one small listing per agent.
	wrote, toAgents := map[string]bool{}, 0
	for to := range agents {
		err := rt.dmSubjects(ctx, prefix+to+".*", func(page []string) (int, error) {
			for _, subject := range page {
				_, from := recipient(subject)
				wrote[from] = true
			}
			toAgents += len(page)
			return len(page), nil
		})
		if err != nil {
			return 0, err
		}
	}
	// Every subject addressed to an agent: nothing to reclaim, the usual case. A subject
	// written meanwhile only makes the pass look further.
	if done, err := rt.onlyAgentSubjects(ctx, toAgents); done || err != nil {
		return 0, err
	}
	var wide []purgeRequest
	for from := range agents {
		if !wrote[from] {
			wide = append(wide, purgeRequest{Filter: prefix + "*." + from, Sequence: before, sender: from})
		}
	}
	total, err := rt.purgeDM(ctx, wide, tally)
	if err != nil {
		return total, err
	}
	if done, err := rt.onlyAgentSubjects(ctx, toAgents); done || err != nil {
		return total, err
	}
	err = rt.dmSubjects(ctx, prefix+">", func(page []string) (int, error) {
		kept := 0
		for chunk := range slices.Chunk(page, reclaimChunk) {
			rt.mintMu.Lock()
			agents, err := m.dmRecipients(rt)
			var reqs []purgeRequest
			for _, subject := range chunk {
				if to, from := recipient(subject); err == nil && !agents[to] {
					reqs = append(reqs, purgeRequest{Filter: subject, sender: from})
				}
			}
			purged, perr := rt.purgeDM(ctx, reqs, tally)
			rt.mintMu.Unlock()
			total += purged
			kept += len(chunk) - len(reqs)
			if err = errors.Join(err, perr); err != nil {
				return kept, err
			}
		}
		return kept, nil
	})
	return total, err
}

// onlyAgentSubjects reports whether DM_<s> holds no more subjects than toAgents, the count of
// subjects addressed to agents.
func (rt *spaceRuntime) onlyAgentSubjects(ctx context.Context, toAgents int) (bool, error) {
	st, err := rt.stream(ctx, rt.names.DMStream())
	if err != nil {
		return false, err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", rt.names.DMStream(), err)
	}
	return info.State.NumSubjects <= uint64(toAgents), nil
}

// dmRecipients are the subject tokens of every agent in the space's registry, revoked or
// not: the ids whose DMs the stream keeps.
func (m *Mesh) dmRecipients(rt *spaceRuntime) (map[string]bool, error) {
	recs, err := m.store.List(rt.name)
	if err != nil {
		return nil, err
	}
	agents := make(map[string]bool, len(recs))
	for _, rec := range recs {
		if rec.Profile == provisioner.ProfileAgent {
			agents[wire.Sanitize(rec.ID)] = true
		}
	}
	return agents, nil
}

// dmSubjects hands fn DM_<s>'s subjects matching filter, sorted, one page of at most
// JetStream's 100 000 at a time, so a flood of subjects is never held whole. fn returns how
// many of its page it left in the stream: the next page starts after those. A subject fn
// purged that was written to again meanwhile shifts the pages by one, which the next pass
// makes good.
func (rt *spaceRuntime) dmSubjects(ctx context.Context, filter string, fn func(page []string) (kept int, err error)) error {
	return rt.streamSubjects(ctx, rt.names.DMStream(), filter, func(page map[string]uint64) (int, error) {
		return fn(slices.Sorted(maps.Keys(page)))
	})
}

// streamSubjects hands fn stream's subjects matching filter with their message counts, one
// page of at most JetStream's 100 000 at a time; fn returns how many of its page it left in
// the stream, as for dmSubjects.
func (rt *spaceRuntime) streamSubjects(ctx context.Context, stream, filter string, fn func(page map[string]uint64) (kept int, err error)) error {
	subject := "$JS.API.STREAM.INFO." + stream
	offset := 0
	for {
		body, err := json.Marshal(map[string]any{"subjects_filter": filter, "offset": offset})
		if err != nil {
			return err
		}
		msg, err := rt.prov.RequestWithContext(ctx, subject, body)
		if err != nil {
			return fmt.Errorf("list the subjects %s of %s: %w", filter, stream, err)
		}
		var answer struct {
			Total  int                 `json:"total"`
			Offset int                 `json:"offset"`
			Error  *jetstream.APIError `json:"error"`
			State  struct {
				Subjects map[string]uint64 `json:"subjects"`
			} `json:"state"`
		}
		if err := json.Unmarshal(msg.Data, &answer); err != nil {
			return fmt.Errorf("list the subjects %s of %s: %w", filter, stream, err)
		}
		if answer.Error != nil {
			return fmt.Errorf("list the subjects %s of %s: %w", filter, stream, answer.Error)
		}
		page := answer.State.Subjects
		if len(page) == 0 {
			return nil
		}
		kept, err := fn(page)
		if err != nil || answer.Total <= answer.Offset+len(page) {
			return err
		}
		offset += kept
	}
}

// purgeAcknowledged deletes, for every dm_<id> queue, the DMs at or below its ack floor: the
// ones its agent has acknowledged. Only the mesh's own bind-only durables count; the
// reconciler keeps no other dm_ consumer.
func (rt *spaceRuntime) purgeAcknowledged(ctx context.Context, st jetstream.Stream, tally *senderTally) (int64, error) {
	n := rt.names
	var reqs []purgeRequest
	list := st.ListConsumers(ctx)
	for info := range list.Info() {
		id, ok := strings.CutPrefix(info.Name, "dm_")
		if !ok || info.AckFloor.Stream == 0 || info.Config.FilterSubject != n.DMConsumerSpec(id, 0).Filter {
			continue
		}
		reqs = append(reqs, purgeRequest{Filter: info.Config.FilterSubject, Sequence: info.AckFloor.Stream + 1})
	}
	if err := list.Err(); err != nil {
		return 0, fmt.Errorf("list the consumers of %s: %w", n.DMStream(), err)
	}
	return rt.purgeDM(ctx, reqs, tally)
}

// purgeRequest is the body of a JetStream stream purge: the messages of Filter below
// Sequence, or all but its Keep newest (all of them when both are zero).
type purgeRequest struct {
	Filter   string `json:"filter"`
	Sequence uint64 `json:"seq,omitempty"`
	Keep     uint64 `json:"keep,omitempty"`
	// sender is the one sender token of Filter's DMs, when there is one, for the tally.
	sender string
}

// senderTally counts reclaimed DMs by sender token, so that the reclaim's log line names
// who filled the store. Its methods are safe for concurrent use.
type senderTally struct {
	mu sync.Mutex
	n  map[string]int64
}

// merge adds every count of o to t.
func (t *senderTally) merge(o *senderTally) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for sender, n := range o.n {
		t.add(sender, n)
	}
}

func (t *senderTally) add(sender string, purged int64) {
	if sender == "" || purged == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == nil {
		t.n = map[string]int64{}
	}
	t.n[sender] += purged
}

// topSenders names, by credential name and id, the senders of most of the DMs tally counts,
// at most three, most first: "mallory (U…)=41637, …".
func (m *Mesh) topSenders(space string, tally *senderTally) string {
	tally.mu.Lock()
	defer tally.mu.Unlock()
	ids := slices.Collect(maps.Keys(tally.n))
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(tally.n[b], tally.n[a]) })
	var out []string
	for _, id := range ids[:min(3, len(ids))] {
		name := id
		if n := m.credentialName(space, id); n != id {
			name = n + " (" + id + ")"
		}
		out = append(out, fmt.Sprintf("%s=%d", name, tally.n[id]))
	}
	return strings.Join(out, ", ")
}

// purgeDM sends reqs to DM_<s>, reclaimWorkers at a time, and returns how many messages they
// deleted, counting them by sender in tally. The jetstream client's Purge does not say how many; the API answer does.
func (rt *spaceRuntime) purgeDM(ctx context.Context, reqs []purgeRequest, tally *senderTally) (int64, error) {
	return rt.purge(ctx, rt.names.DMStream(), reqs, tally)
}

// purge sends reqs to stream as purgeDM does to DM_<s>.
func (rt *spaceRuntime) purge(ctx context.Context, stream string, reqs []purgeRequest, tally *senderTally) (int64, error) {
	subject := "$JS.API.STREAM.PURGE." + stream
	var (
		mu     sync.Mutex
		total  int64
		errs   []error
		wg     sync.WaitGroup
		queued = make(chan purgeRequest)
	)
	for range min(reclaimWorkers, len(reqs)) {
		wg.Go(func() {
			for req := range queued {
				purged, err := rt.purgeOne(ctx, subject, req)
				tally.add(req.sender, purged)
				mu.Lock()
				total += purged
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		})
	}
	for _, req := range reqs {
		if ctx.Err() != nil {
			break
		}
		queued <- req
	}
	close(queued)
	wg.Wait()
	if ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	return total, errors.Join(errs...)
}

func (rt *spaceRuntime) purgeOne(ctx context.Context, subject string, req purgeRequest) (int64, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return 0, err
	}
	msg, err := rt.prov.RequestWithContext(ctx, subject, body)
	if err != nil {
		return 0, fmt.Errorf("purge %s: %w", req.Filter, err)
	}
	var answer struct {
		Purged uint64              `json:"purged"`
		Error  *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &answer); err != nil {
		return 0, fmt.Errorf("purge %s: %w", req.Filter, err)
	}
	if answer.Error != nil {
		return 0, fmt.Errorf("purge %s: %w", req.Filter, answer.Error)
	}
	return int64(answer.Purged), nil
}
