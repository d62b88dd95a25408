package space

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/internal/jsconfig"
	"github.com/cotal-go/cotal/internal/retry"
	"github.com/cotal-go/cotal/wire"
)

// provision creates or reconciles every stream and bucket of one space and writes the
// `=defaults` channel record once (SPEC §7, §8; docs/storage.md). It is idempotent: a restart
// puts drifted settings back, and an existing `=defaults` record is left as the operator last
// set it. The streams are independent of one another, so they are all requested at once: start
// waits one round trip for them, not one per stream. On a fresh broker (a memory mesh's,
// started a moment ago with an empty store) every stream is created outright, which saves the
// update that create-or-update tries first. It returns each stream's handle by name, so later
// passes over the streams need not ask for their info again. Each stream keeps replicas copies
// (three on a cluster of three nodes or more).
func provision(ctx context.Context, js jetstream.JetStream, n wire.Names, limits wire.StreamLimits, storage jetstream.StorageType, replicas int, class wire.DeliveryClass, fresh bool) (map[string]jetstream.Stream, error) {
	cfgs := jsconfig.Streams(n.StreamsWithin(limits), storage)
	for i := range cfgs {
		cfgs[i].Replicas = replicas
	}
	streams := make([]jetstream.Stream, len(cfgs))
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for i, cfg := range cfgs {
		wg.Go(func() { streams[i], errs[i] = ensureStream(ctx, js, cfg, fresh, requestTimeout) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	byName := make(map[string]jetstream.Stream, len(cfgs))
	for i, cfg := range cfgs {
		byName[cfg.Name] = streams[i]
	}
	return byName, writeDefaults(ctx, js, n, class)
}

// ensureStream creates cfg's stream, or on a broker that is not fresh, creates or updates it.
// Each request waits at most request for its answer, whatever ctx allows: a clustered
// metadata leader that loses its leadership between taking a create and proposing it drops
// the request without an answer, and a request that waited for ctx's whole deadline would
// turn one lost answer into a failed start. In a cluster that has a leader but not yet the
// nodes cfg's replicas need, JetStream refuses for want of peers; ensureStream asks again
// until they have joined or ctx ends. A request that times out (a store recovering after a
// crash on a loaded machine has answered an update after 7 s) is asked again up to
// provisionTimeouts times, and for a replicated stream until ctx ends: create and update
// are idempotent. A cluster's meta leader may not yet hold the space account's JetStream
// limits pushed from the key-store node a moment earlier ("JetStream not enabled for
// account"), and a member may not yet have looked the account up ("account not found");
// that is asked again for up to accountPendingTries rounds, so an account really without
// JetStream still fails in seconds. While a cluster settles, one member can refuse
// a replicated stream's assignment ("error creating store for stream") that the others take
// and elect a leader for moments later; that too is asked again, storeRefusedTries rounds.
func ensureStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig, fresh bool, request time.Duration) (jetstream.Stream, error) {
	retry := time.NewTicker(clusterRetry)
	defer retry.Stop()
	timeouts, accountPending, storeRefused := 0, 0, 0
	for {
		st, err := askStream(ctx, js, cfg, fresh, request)
		if err == nil {
			return st, nil
		}
		timedOut := errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil
		if timedOut {
			timeouts++
		}
		if accountUnknown(err) {
			accountPending++
		}
		replicaRefused := cfg.Replicas > 1 && apiErrorCode(err) == 10049
		if replicaRefused {
			storeRefused++
		}
		if !waitingForPeers(err) && (!timedOut || (cfg.Replicas <= 1 && timeouts >= provisionTimeouts)) &&
			(!accountUnknown(err) || accountPending >= accountPendingTries) &&
			(!replicaRefused || storeRefused >= storeRefusedTries) {
			return nil, fmt.Errorf("provision stream %s: %w", cfg.Name, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("provision stream %s with %d replicas: %w (last: %w)", cfg.Name, cfg.Replicas, ctx.Err(), err)
		case <-retry.C:
		}
	}
}

// askStream sends one create (fresh) or create-or-update request for cfg and waits at most
// request for its answer.
func askStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig, fresh bool, request time.Duration) (jetstream.Stream, error) {
	ctx, cancel := context.WithTimeout(ctx, request)
	defer cancel()
	if fresh {
		return js.CreateStream(ctx, cfg)
	}
	return js.CreateOrUpdateStream(ctx, cfg)
}

// requestTimeout bounds one stream or consumer request of provisioning; it is above the
// longest answer seen from a store recovering on a loaded machine.
const requestTimeout = 10 * time.Second

// clusterRetry is how often provisioning asks again while a cluster lacks the nodes a
// stream's replicas need; provisionTimeouts how many timed-out requests it sends in all;
// accountPendingTries how many refusals for an account without JetStream it takes, and
// storeRefusedTries how many refusals of a replicated stream's store.
const (
	clusterRetry        = 250 * time.Millisecond
	provisionTimeouts   = 4
	accountPendingTries = 20
	storeRefusedTries   = 20
)

// waitingForPeers reports whether err is JetStream refusing a stream for want of cluster
// peers (no suitable peers, insufficient resources, cluster temporarily unavailable), which
// passes as the other nodes join.
func waitingForPeers(err error) bool {
	switch apiErrorCode(err) {
	case 10005, 10008, 10023:
		return true
	}
	return false
}

// accountUnknown reports whether err is JetStream refusing for an account it holds no
// JetStream limits of (10039), or one a node it assigned the stream to could not look up yet
// (10035, "account not found": a member started beside the key-store node fetches the
// account through the cluster's resolver once its routes are up).
func accountUnknown(err error) bool {
	code := apiErrorCode(err)
	return code == 10039 || code == 10035
}

// apiErrorCode is the JetStream error code of err, or 0 when err is not a JetStream API error.
func apiErrorCode(err error) jetstream.ErrorCode {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return 0
	}
	return apiErr.ErrorCode
}

// writeDefaults writes the `=defaults` record with class unless one is there already. Both
// requests are asked again when their answer is lost, and the create while the just-made
// bucket has no leader (leaderless): a create applied but unanswered finds its own record
// the second time, which is what ErrKeyExists already accepts.
func writeDefaults(ctx context.Context, js jetstream.JetStream, n wire.Names, class wire.DeliveryClass) error {
	var kv jetstream.KeyValue
	if err := retry.Unanswered(ctx, requestTimeout, func(ctx context.Context) (err error) {
		kv, err = js.KeyValue(ctx, n.ChannelsBucket())
		return err
	}); err != nil {
		return fmt.Errorf("open channel registry %s: %w", n.ChannelsBucket(), err)
	}
	defaults, err := json.Marshal(wire.ChannelDefaults{DeliveryClass: class})
	if err != nil {
		return err
	}
	// SPEC §7: defaults.deliveryClass is written at space creation so the effective default
	// is discoverable on the wire; Create never overwrites an operator's later choice.
	err = leaderless.Do(ctx, noStreamAnswer, func() error {
		return retry.Unanswered(ctx, requestTimeout, func(ctx context.Context) error {
			_, err := kv.Create(ctx, wire.DefaultsKey, defaults)
			return err
		})
	})
	if err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("write %s/%s: %w", n.ChannelsBucket(), wire.DefaultsKey, err)
	}
	return nil
}

// provisionInstance pre-creates the bind-only consumers of one instance (SPEC §8, §9 item 3):
// agents may bind but never create them.
func provisionInstance(ctx context.Context, js jetstream.JetStream, n wire.Names, id, role string, ackWait time.Duration) error {
	for _, c := range n.InstanceConsumerSpecs(id, role, ackWait) {
		// Idempotent, so a create whose answer a clustered metadata leader dropped is asked
		// again instead of failing the mint at its deadline.
		if err := retry.Unanswered(ctx, requestTimeout, func(ctx context.Context) error {
			_, err := js.CreateOrUpdateConsumer(ctx, c.Stream, jsconfig.Consumer(c))
			return err
		}); err != nil {
			return fmt.Errorf("create consumer %s on %s: %w", c.Name, c.Stream, err)
		}
	}
	return nil
}
