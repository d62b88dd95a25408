// Package jsconfig turns wire's stream and consumer layout (docs/storage.md) into nats.go
// JetStream configs. It is the one place the layout meets the client library: space provisions
// with it, delivery creates its consumers with it, endpoint creates chathist_<id> with it, and
// the tests build their spaces with it, so none of them keeps a copy of the layout.
package jsconfig

import (
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/wire"
)

// Stream returns the JetStream config of s stored on storage, with one replica.
func Stream(s wire.StreamSpec, storage jetstream.StorageType) jetstream.StreamConfig {
	cfg := jetstream.StreamConfig{
		Name:              s.Name,
		Subjects:          append([]string(nil), s.Subjects...),
		Retention:         jetstream.LimitsPolicy,
		Storage:           storage,
		Replicas:          1,
		Discard:           jetstream.DiscardOld,
		MaxMsgs:           s.MaxMsgs,
		MaxBytes:          s.MaxBytes,
		MaxMsgSize:        s.MaxMsgSize,
		MaxConsumers:      s.MaxConsumers,
		MaxMsgsPerSubject: s.MaxMsgsPerSubject,
		MaxAge:            s.MaxAge,
		Duplicates:        s.Duplicates,
		AllowDirect:       s.AllowDirect,
		DenyDelete:        s.DenyDelete,
		ConsumerLimits:    jetstream.StreamConsumerLimits{InactiveThreshold: s.ConsumerInactiveLimit},
	}
	if s.Retention == wire.RetainWorkQueue {
		cfg.Retention = jetstream.WorkQueuePolicy
	}
	if s.Discard == wire.DiscardNew {
		cfg.Discard = jetstream.DiscardNew
		cfg.DiscardNewPerSubject = s.DiscardNewPerSubject
	}
	return cfg
}

// Streams returns the JetStream configs of every stream in specs, in order.
func Streams(specs []wire.StreamSpec, storage jetstream.StorageType) []jetstream.StreamConfig {
	out := make([]jetstream.StreamConfig, len(specs))
	for i, s := range specs {
		out[i] = Stream(s, storage)
	}
	return out
}

// Consumer returns the JetStream config of the durable consumer c; its stream is c.Stream.
func Consumer(c wire.ConsumerSpec) jetstream.ConsumerConfig {
	cfg := jetstream.ConsumerConfig{
		Durable:           c.Name,
		FilterSubject:     c.Filter,
		AckPolicy:         jetstream.AckExplicitPolicy,
		AckWait:           c.AckWait,
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		MemoryStorage:     c.MemoryStorage,
		InactiveThreshold: c.InactiveThreshold,
		MaxAckPending:     c.MaxAckPending,
	}
	if c.Ack == wire.AckNone {
		cfg.AckPolicy = jetstream.AckNonePolicy
	}
	switch c.Deliver {
	case wire.DeliverNew:
		cfg.DeliverPolicy = jetstream.DeliverNewPolicy
	case wire.DeliverByStartTime:
		start := c.StartTime
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &start
	}
	return cfg
}
