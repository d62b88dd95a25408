package space

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/internal/jsconfig"
	"github.com/cotal-go/cotal/provisioner"
)

// defaultReconcileInterval is how often every consumer of a space is re-checked unless
// Options.ReconcileInterval says otherwise.
const defaultReconcileInterval = 30 * time.Second

// reconcileTimeout bounds one pass over a space.
const reconcileTimeout = 30 * time.Second

// ReconcileReport is what one pass of the consumer reconciler did in one space.
type ReconcileReport struct {
	// Checked counts the consumers judged.
	Checked int
	// Deleted counts consumers deleted because the rule keeps no such consumer.
	Deleted int
	// Restored counts bind-only durables put back to their wire spec.
	Restored int
	// PurgedDMs counts the DMs the pass reclaimed (dmreclaim.go): to ids that are no agent of
	// the space, or acknowledged ones while the DM stream ran full. The passes after a mint or
	// revoke reclaim nothing.
	PurgedDMs int64
	// PurgedTasks counts the tasks the pass reclaimed (taskreclaim.go): for roles no agent
	// holds.
	PurgedTasks int64
	// PurgedPosts counts the posts the pass deleted from the channels past one sender's
	// Limits.ChannelsPerIdentity (channelcap.go).
	PurgedPosts int64
}

// reconcileStats are a space's reconciler counters since start, for the metrics.
type reconcileStats struct {
	passes, deleted, restored, failures atomic.Int64
	pruned                              atomic.Int64 // durable copies deleted after a narrowing
	purgedDMs                           atomic.Int64 // DMs reclaimed (dmreclaim.go)
	purgedTasks                         atomic.Int64 // tasks reclaimed (taskreclaim.go)
	purgedPosts                         atomic.Int64 // posts past a channel cap (channelcap.go)
}

// Reconcile checks every consumer of every stream of space against the registry now and
// deletes or restores each one the rule (reconcile_rule.go) does not keep; each pass then
// deletes the registry rows of credentials that ended (provisioner.Store.Forget) and
// reclaims the DM stream's space (dmreclaim.go). The mesh runs it at start and every
// Options.ReconcileInterval, the consumer part also after every revoke and every mint but a
// provisioned new identity's (Mint), and judges each consumer create as it happens; calling
// it is only needed to act at once. An open mesh has no registry and nothing to reconcile.
func (m *Mesh) Reconcile(ctx context.Context, space string) (ReconcileReport, error) {
	rt, err := m.runtime(space)
	if err != nil {
		return ReconcileReport{}, err
	}
	return m.upkeep(ctx, rt)
}

// passCause is why a reconciliation pass runs, which decides whether creating a missing
// bind-only consumer is news. At start, and in the pass that follows an agent's mint, its
// consumers are expected to be created (a credential minted while no mesh ran): that is
// logged at info. Any other pass finds a consumer someone deleted, and
// recreating it is a warning.
type passCause struct {
	start  bool   // the mesh is starting
	minted string // the id of the credential whose mint the pass follows
}

// expects reports whether creating id's consumers is part of what the pass is for.
func (c passCause) expects(id string) bool { return c.start || c.minted == id }

// reconcile is one pass; the caller holds rt.mintMu, so the registry does not change under it.
func (m *Mesh) reconcile(ctx context.Context, rt *spaceRuntime, cause passCause) (ReconcileReport, error) {
	var rep ReconcileReport
	if m.store == nil {
		return rep, nil
	}
	recs, err := m.store.List(rt.name)
	if err != nil {
		return rep, err
	}
	// Forgotten after the judging, which tells what a revoked or expired credential leaves
	// from an anomaly by its row (decision.ended).
	defer m.forgetExpired(rt)
	r := newRegistryView(rt.names, recs, time.Now(), m.opts.AckWait, rt.deliveryInbox)
	present, errs := m.reconcileStreams(ctx, rt, r, &rep)
	errs = append(errs, m.restoreMissing(ctx, rt, r, cause, present, &rep), m.capAllWatches(ctx, rt, recs))
	rt.reconciled.passes.Add(1)
	rt.reconciled.deleted.Add(int64(rep.Deleted))
	rt.reconciled.restored.Add(int64(rep.Restored))
	if err := errors.Join(errs...); err != nil {
		rt.reconciled.failures.Add(1)
		return rep, fmt.Errorf("reconcile consumers of space %s: %w", rt.name, err)
	}
	return rep, nil
}

// forgetExpired deletes the registry rows of credentials that can no longer connect
// (provisioner.Store.Forget), so the one-shot credentials the commands mint beside `cotal up`
// leave the registry once expired, and a streaming command's once revoked
// (provisioner.MintRequest.ForgetOnRevoke), not only at the next start. A failure is logged: the rows
// are harmless, and the next pass or start tries again.
func (m *Mesh) forgetExpired(rt *spaceRuntime) {
	gone, err := m.store.Forget(rt.name, time.Now())
	if err != nil {
		m.log.Error("forgetting expired credentials failed", "space", rt.name, "err", err)
	}
	if len(gone) > 0 {
		m.log.Debug("forgot expired credentials", "space", rt.name, "count", len(gone))
	}
}

// reconcileStreams judges the consumers of every stream of the space, all streams at once:
// each one's listing and repairs touch no other stream, so the pass waits for the slowest
// stream rather than for the sum (it runs after every mint and revoke). It returns what
// stays, as stream/name, and each stream's error.
func (m *Mesh) reconcileStreams(ctx context.Context, rt *spaceRuntime, r registryView, rep *ReconcileReport) (map[string]bool, []error) {
	streams := rt.names.Streams()
	presents := make([]map[string]bool, len(streams))
	reps := make([]ReconcileReport, len(streams))
	errs := make([]error, len(streams))
	var wg sync.WaitGroup
	for i, s := range streams {
		presents[i] = map[string]bool{}
		wg.Go(func() { errs[i] = m.reconcileStream(ctx, rt, r, s.Name, presents[i], &reps[i]) })
	}
	wg.Wait()
	present := map[string]bool{}
	for i := range streams {
		maps.Copy(present, presents[i])
		rep.Checked += reps[i].Checked
		rep.Deleted += reps[i].Deleted
		rep.Restored += reps[i].Restored
	}
	return present, errs
}

// reconcileStream judges every consumer of stream, and records in present each one that
// stays, as stream/name.
func (m *Mesh) reconcileStream(ctx context.Context, rt *spaceRuntime, r registryView, stream string, present map[string]bool, rep *ReconcileReport) error {
	st, err := rt.stream(ctx, stream)
	if err != nil {
		return fmt.Errorf("open stream %s: %w", stream, err)
	}
	list := st.ListConsumers(ctx)
	var infos []*jetstream.ConsumerInfo
	for info := range list.Info() {
		infos = append(infos, info)
	}
	if err := list.Err(); err != nil {
		return fmt.Errorf("list consumers of %s: %w", stream, err)
	}
	var errs []error
	for _, info := range infos {
		rep.Checked++
		j := r.decide(stream, info.Name, info.Config)
		if j.action == keep {
			present[stream+"/"+info.Name] = true
			continue
		}
		if err := m.apply(ctx, rt, stream, info.Name, j, rep); err != nil {
			errs = append(errs, err)
			continue
		}
		if j.action == restore {
			present[stream+"/"+info.Name] = true
		}
	}
	return errors.Join(errs...)
}

// apply carries out j on the consumer name of stream: restore or delete, counted in rep and
// logged with the owner's id, never a secret.
func (m *Mesh) apply(ctx context.Context, rt *spaceRuntime, stream, name string, j decision, rep *ReconcileReport) error {
	if j.action == restore {
		if err := m.restoreConsumer(ctx, rt, stream, name, j); err != nil {
			return err
		}
		rep.Restored++
		m.log.Warn("restored a redefined consumer to its spec", "space", rt.name, "stream", stream,
			"consumer", name, "owner", j.owner, "reason", j.why)
		return nil
	}
	if err := rt.js.DeleteConsumer(ctx, stream, name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("delete consumer %s on %s: %w", name, stream, err)
	}
	rep.Deleted++
	if j.ended {
		// A revocation or an expiry taking the credential's consumers with it: the revocation
		// is the news, logged where it happens.
		m.log.Debug("deleted a consumer of a revoked or expired credential", "space", rt.name, "stream", stream,
			"consumer", name, "owner", j.owner, "reason", j.why)
		return nil
	}
	m.log.Warn("deleted a consumer the layout does not allow", "space", rt.name, "stream", stream,
		"consumer", name, "owner", j.owner, "reason", j.why)
	return nil
}

// restoreConsumer puts a bind-only durable back to j.spec. An update keeps its
// acknowledgement state; what the server will not update in place (a push consumer made pull,
// another ack policy) is deleted and created again, which loses that state, so the owner may
// see retained messages again: at-least-once, deduplicated by id (SPEC §5), nothing lost.
func (m *Mesh) restoreConsumer(ctx context.Context, rt *spaceRuntime, stream, name string, j decision) error {
	cfg := jsconfig.Consumer(j.spec)
	if c, err := rt.js.UpdateConsumer(ctx, stream, cfg); err == nil && drift(j.spec, c.CachedInfo().Config) == "" {
		return nil
	}
	if err := rt.js.DeleteConsumer(ctx, stream, name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("delete consumer %s on %s to restore it: %w", name, stream, err)
	}
	if _, err := rt.js.CreateConsumer(ctx, stream, cfg); err != nil {
		return fmt.Errorf("restore consumer %s on %s: %w", name, stream, err)
	}
	return nil
}

// restoreMissing creates every bind-only durable of an active agent that is not present: one
// minted while no mesh ran (expected, as cause says), or one another
// identity deleted. Its owner binds it and cannot create it.
func (m *Mesh) restoreMissing(ctx context.Context, rt *spaceRuntime, r registryView, cause passCause, present map[string]bool, rep *ReconcileReport) error {
	var errs []error
	for _, rec := range r.active {
		if rec.Profile != provisioner.ProfileAgent {
			continue
		}
		for _, c := range rt.names.InstanceConsumerSpecs(rec.ID, rec.Grants.Role, m.opts.AckWait) {
			if present[c.Stream+"/"+c.Name] {
				continue
			}
			if _, err := rt.js.CreateOrUpdateConsumer(ctx, c.Stream, jsconfig.Consumer(c)); err != nil {
				errs = append(errs, fmt.Errorf("recreate consumer %s on %s: %w", c.Name, c.Stream, err))
				continue
			}
			present[c.Stream+"/"+c.Name] = true
			rep.Restored++
			attrs := []any{"space", rt.name, "stream", c.Stream, "consumer", c.Name, "owner", rec.ID, "name", rec.Name}
			if cause.expects(rec.ID) {
				m.log.Info("created an agent's consumer", attrs...)
				continue
			}
			m.log.Warn("recreated a missing consumer", attrs...)
		}
	}
	return errors.Join(errs...)
}

// reconcileLoop re-checks rt's consumers every interval, and each consumer created or updated
// as it happens (queued on news by watchCreates), until life ends. Ending life also cancels
// the requests in flight, so Close does not wait out a pass that a cluster without its
// quorum leaves unanswered.
func (m *Mesh) reconcileLoop(life context.Context, rt *spaceRuntime, interval time.Duration, news <-chan created) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for life.Err() == nil {
		select {
		case <-life.Done():
			return
		case c := <-news:
			m.checkCreated(life, rt, c)
		case <-tick.C:
			ctx, cancel := context.WithTimeout(life, reconcileTimeout)
			_, err := m.upkeep(ctx, rt)
			cancel()
			if err != nil && life.Err() == nil {
				m.log.Error("periodic consumer reconciliation failed", "space", rt.name, "err", err)
			}
		}
	}
}

// startReconcilers runs each space's periodic and on-create passes, stopped by Close through
// m.life.
func (m *Mesh) startReconcilers() {
	if m.store == nil || m.opts.ReconcileInterval < 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, rt := range m.spaces {
		// Subscribed before Start returns, so that the creator of every consumer made after it
		// is known (watchcap.go).
		news := make(chan created, createdQueue)
		sub, err := watchCreates(rt, news)
		if err == nil {
			err = rt.prov.Flush()
		}
		if err != nil {
			m.log.Error("watching consumer creates failed; only the periodic pass runs", "space", rt.name, "err", err)
		}
		m.watcher.Add(1)
		go func() {
			defer m.watcher.Done()
			if sub != nil {
				defer func() { _ = sub.Unsubscribe() }()
			}
			m.reconcileLoop(m.life, rt, m.opts.ReconcileInterval, news)
		}()
		if every := m.opts.Limits.FloodCheck; every > 0 {
			m.watcher.Add(1)
			go func() {
				defer m.watcher.Done()
				m.watchFill(m.life, rt, every)
			}()
		}
	}
}
