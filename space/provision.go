package space

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/internal/jsconfig"
	"github.com/cotal-go/cotal/wire"
)

// provision creates or reconciles every stream and bucket of one space and writes the
// `=defaults` channel record once (SPEC §7, §8; LAYOUT.md). It is idempotent: a restart
// puts drifted settings back, and an existing `=defaults` record is left as the operator
// last set it.
func provision(ctx context.Context, js jetstream.JetStream, n wire.Names, limits wire.StreamLimits, storage jetstream.StorageType, class wire.DeliveryClass) error {
	for _, cfg := range jsconfig.Streams(n.StreamsWithin(limits), storage) {
		if _, err := js.CreateOrUpdateStream(ctx, cfg); err != nil {
			return fmt.Errorf("provision stream %s: %w", cfg.Name, err)
		}
	}
	kv, err := js.KeyValue(ctx, n.ChannelsBucket())
	if err != nil {
		return fmt.Errorf("open channel registry %s: %w", n.ChannelsBucket(), err)
	}
	defaults, err := json.Marshal(wire.ChannelDefaults{DeliveryClass: class})
	if err != nil {
		return err
	}
	// SPEC §7: defaults.deliveryClass is written at space creation so the effective default
	// is discoverable on the wire; Create never overwrites an operator's later choice.
	if _, err := kv.Create(ctx, wire.DefaultsKey, defaults); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("write %s/%s: %w", n.ChannelsBucket(), wire.DefaultsKey, err)
	}
	return nil
}

// provisionInstance pre-creates the bind-only consumers of one instance (SPEC §8, §9 item 3):
// agents may bind but never create them.
func provisionInstance(ctx context.Context, js jetstream.JetStream, n wire.Names, id, role string, ackWait time.Duration) error {
	for _, c := range n.InstanceConsumerSpecs(id, role, ackWait) {
		if _, err := js.CreateOrUpdateConsumer(ctx, c.Stream, jsconfig.Consumer(c)); err != nil {
			return fmt.Errorf("create consumer %s on %s: %w", c.Name, c.Stream, err)
		}
	}
	return nil
}
