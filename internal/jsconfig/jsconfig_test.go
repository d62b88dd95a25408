package jsconfig

import (
	"reflect"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/wire"
)

// Each consumer of docs/storage.md "Consumers" comes out as the table there says.
func TestConsumersMatchTheLayoutTable(t *testing.T) {
	n := wire.NewNames("main")
	since := time.Unix(1700000000, 0)
	tests := []struct {
		name string
		spec wire.ConsumerSpec
		want jetstream.ConsumerConfig
	}{
		{"dm_<id> is explicit ack, deliver all, on the instance's DM subjects", n.DMConsumerSpec("alice", time.Minute),
			jetstream.ConsumerConfig{Durable: "dm_alice", FilterSubject: "cotal.main.inst.alice.*",
				AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute, DeliverPolicy: jetstream.DeliverAllPolicy}},
		{"svc_<role> is explicit ack on the role's TASK subjects", n.SvcConsumerSpec("coder", time.Minute),
			jetstream.ConsumerConfig{Durable: "svc_coder", FilterSubject: "cotal.main.svc.coder.*",
				AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute, DeliverPolicy: jetstream.DeliverAllPolicy}},
		{"dlv_<id> reads only the member's DLV subject", n.DLVConsumerSpec("alice", time.Minute),
			jetstream.ConsumerConfig{Durable: "dlv_alice", FilterSubject: "cotal.main.dlv.alice",
				AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute, DeliverPolicy: jetstream.DeliverAllPolicy}},
		{"chathist_<id> has exactly the one pinned filter, acks none and lives in memory", n.HistoryConsumerSpec("alice", "team", time.Time{}),
			jetstream.ConsumerConfig{Durable: "chathist_alice", FilterSubject: "cotal.main.chat.*.team",
				AckPolicy: jetstream.AckNonePolicy, DeliverPolicy: jetstream.DeliverAllPolicy, MemoryStorage: true,
				InactiveThreshold: 30 * time.Second}},
		{"chathist_<id> with a window starts at its start time", n.HistoryConsumerSpec("alice", "team", since),
			jetstream.ConsumerConfig{Durable: "chathist_alice", FilterSubject: "cotal.main.chat.*.team",
				AckPolicy: jetstream.AckNonePolicy, DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &since,
				MemoryStorage: true, InactiveThreshold: 30 * time.Second}},
		{"fanout reads every new chat message", n.FanoutConsumerSpec(),
			jetstream.ConsumerConfig{Durable: "fanout", FilterSubject: "cotal.main.chat.>",
				AckPolicy: jetstream.AckExplicitPolicy, AckWait: 60 * time.Second, DeliverPolicy: jetstream.DeliverNewPolicy}},
		{"reader reads all of INBOX with at most 1000 pending", n.ReaderConsumerSpec(),
			jetstream.ConsumerConfig{Durable: "reader", FilterSubject: "cotal.main.dinbox.>",
				AckPolicy: jetstream.AckExplicitPolicy, AckWait: 60 * time.Second, DeliverPolicy: jetstream.DeliverAllPolicy,
				MaxAckPending: 1000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Consumer(tt.spec); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Consumer =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// The streams keep the settings docs/storage.md "Streams" and "KV buckets" give, which
// docs/hostile-agents.md and docs/durable.md rely on.
func TestStreamsKeepTheLayoutSettings(t *testing.T) {
	byName := map[string]jetstream.StreamConfig{}
	for _, cfg := range Streams(wire.NewNames("main").Streams(), jetstream.MemoryStorage) {
		byName[cfg.Name] = cfg
	}
	tests := []struct {
		name string
		ok   func(map[string]jetstream.StreamConfig) bool
	}{
		{"CHAT keeps 1000 per subject, discards old and allows Direct Get", func(m map[string]jetstream.StreamConfig) bool {
			c := m["CHAT_main"]
			return c.MaxMsgsPerSubject == 1000 && c.Discard == jetstream.DiscardOld && c.AllowDirect
		}},
		{"TASK is a work queue", func(m map[string]jetstream.StreamConfig) bool {
			return m["TASK_main"].Retention == jetstream.WorkQueuePolicy
		}},
		{"INBOX and DLV deduplicate for two hours", func(m map[string]jetstream.StreamConfig) bool {
			return m["INBOX_main"].Duplicates == 2*time.Hour && m["DLV_main"].Duplicates == 2*time.Hour
		}},
		{"presence expires after the liveness window and denies deletes", func(m map[string]jetstream.StreamConfig) bool {
			c := m["KV_cotal_presence_main"]
			return c.MaxAge == wire.DefaultLivenessWindow && c.Duplicates == wire.DefaultLivenessWindow && c.DenyDelete && !c.AllowRollup
		}},
		{"the channel registry has no Direct Get", func(m map[string]jetstream.StreamConfig) bool {
			return !m["KV_cotal_channels_main"].AllowDirect
		}},
		{"DM is bounded in bytes only, TASK in bytes and per subject, both refusing past their bounds", func(m map[string]jetstream.StreamConfig) bool {
			dm, task := m["DM_main"], m["TASK_main"]
			return dm.MaxBytes == wire.DefaultDMBytes && dm.MaxMsgsPerSubject == wire.Unlimited && dm.Discard == jetstream.DiscardNew && !dm.DiscardNewPerSubject &&
				task.MaxBytes == wire.DefaultTaskBytes && task.MaxMsgsPerSubject == wire.DefaultPerSubject && task.Discard == jetstream.DiscardNew && task.DiscardNewPerSubject
		}},
		{"every stream has a byte limit and together they fit the space total", func(m map[string]jetstream.StreamConfig) bool {
			var sum int64
			for _, c := range m {
				if c.MaxBytes <= 0 {
					return false
				}
				sum += c.MaxBytes
			}
			return sum == wire.DefaultStreamLimits().Total()
		}},
		{"presence bounds its consumers, how long an abandoned one lives, and its records", func(m map[string]jetstream.StreamConfig) bool {
			c := m["KV_cotal_presence_main"]
			return c.MaxConsumers == wire.DefaultWatchConsumers && c.ConsumerLimits.InactiveThreshold == wire.WatchInactiveLimit &&
				c.MaxMsgSize == wire.PresenceMaxMsgSize
		}},
		{"every stream is on the requested storage with one replica", func(m map[string]jetstream.StreamConfig) bool {
			for _, c := range m {
				if c.Storage != jetstream.MemoryStorage || c.Replicas != 1 {
					return false
				}
			}
			return len(m) == 12
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.ok(byName) {
				t.Fatalf("streams: %+v", byName)
			}
		})
	}
}
