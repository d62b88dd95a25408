package space

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/internal/jsconfig"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/wire"
)

func TestTheRuleKeepsExactlyTheLayoutsConsumers(t *testing.T) {
	t.Parallel()
	n := wire.NewNames("main")
	now := time.Now()
	ackWait := wire.DefaultAckWait
	agent := provisioner.Record{ID: "ALICE", Profile: provisioner.ProfileAgent,
		Grants: provisioner.Grants{AllowSubscribe: []string{"general", "team.>"}, Role: "reviewer"}}
	revoked := provisioner.Record{ID: "GONE", Profile: provisioner.ProfileAgent, Revoked: true}
	expired := provisioner.Record{ID: "LATE", Profile: provisioner.ProfileAgent, ExpiresAt: now.Add(-time.Hour)}
	observer := provisioner.Record{ID: "EYES", Profile: provisioner.ProfileObserver}
	admin := provisioner.Record{ID: "ROOT", Profile: provisioner.ProfileAdmin}
	r := newRegistryView(n, []provisioner.Record{agent, revoked, expired, observer, admin}, now, ackWait, "_INBOX_DELIVERY")

	spec := jsconfig.Consumer
	hist := func(filter string, threshold time.Duration) jetstream.ConsumerConfig {
		return jetstream.ConsumerConfig{FilterSubject: filter, AckPolicy: jetstream.AckNonePolicy, InactiveThreshold: threshold}
	}
	watch := func(deliver string, threshold time.Duration) jetstream.ConsumerConfig {
		return jetstream.ConsumerConfig{DeliverSubject: deliver, AckPolicy: jetstream.AckNonePolicy, InactiveThreshold: threshold}
	}
	dmAlice := spec(n.DMConsumerSpec(agent.ID, ackWait))
	widened := dmAlice
	widened.FilterSubject = n.Prefix() + ".inst.>"
	pushed := dmAlice
	pushed.DeliverSubject = wire.InboxPrefix(agent.ID) + ".x"
	presence, membership := wire.KVStream(n.PresenceBucket()), wire.KVStream(n.MembershipFeedBucket())
	for _, tc := range []struct {
		name, stream, consumer string
		cfg                    jetstream.ConsumerConfig
		want                   action
	}{
		{"the delivery's fanout stays", n.ChatStream(), wire.FanoutConsumer, spec(n.FanoutConsumerSpec()), keep},
		{"the delivery's reader stays", n.InboxStream(), wire.ReaderConsumer, spec(n.ReaderConsumerSpec()), keep},
		{"an active agent's dm_ as specified stays", n.DMStream(), n.DMConsumer(agent.ID), dmAlice, keep},
		{"an active agent's widened dm_ is restored", n.DMStream(), n.DMConsumer(agent.ID), widened, restore},
		{"an active agent's dm_ made push is restored", n.DMStream(), n.DMConsumer(agent.ID), pushed, restore},
		{"an expired agent's dm_ stays for its re-mint", n.DMStream(), n.DMConsumer(expired.ID),
			spec(n.DMConsumerSpec(expired.ID, ackWait)), keep},
		{"a revoked agent's dm_ goes", n.DMStream(), n.DMConsumer(revoked.ID), spec(n.DMConsumerSpec(revoked.ID, ackWait)), remove},
		{"svc_ of a role an agent holds stays", n.TaskStream(), n.SvcConsumer("reviewer"),
			spec(n.SvcConsumerSpec("reviewer", ackWait)), keep},
		{"svc_ of a role nobody holds goes", n.TaskStream(), n.SvcConsumer("builder"),
			spec(n.SvcConsumerSpec("builder", ackWait)), remove},
		{"an agent's dlv_ as specified stays", n.DLVStream(), n.DLVConsumer(agent.ID), spec(n.DLVConsumerSpec(agent.ID, ackWait)), keep},
		{"another consumer on DLV goes", n.DLVStream(), "x", hist(n.DLVSubject(agent.ID), time.Minute), remove},
		{"another consumer on INBOX goes", n.InboxStream(), "x", hist(n.Prefix()+".dinbox.>", time.Minute), remove},
		{"an agent's chathist inside its ACL stays", n.ChatStream(), n.HistoryConsumer(agent.ID),
			spec(n.HistoryConsumerSpec(agent.ID, "team.backend", time.Time{})), keep},
		{"an agent's chathist on a wildcard entry of its ACL stays", n.ChatStream(), n.HistoryConsumer(agent.ID),
			hist(n.ChatFilter("team.>"), wire.HistoryInactiveThreshold), keep},
		{"an agent's chathist outside its ACL goes", n.ChatStream(), n.HistoryConsumer(agent.ID),
			hist(n.ChatFilter("random"), wire.HistoryInactiveThreshold), remove},
		{"an agent's chathist on all chat goes", n.ChatStream(), n.HistoryConsumer(agent.ID),
			hist(n.Prefix()+".chat.>", wire.HistoryInactiveThreshold), remove},
		{"an agent's durable chathist goes", n.ChatStream(), n.HistoryConsumer(agent.ID), hist(n.ChatFilter("general"), 0), remove},
		{"an agent's chathist with an inactive threshold of a day goes", n.ChatStream(), n.HistoryConsumer(agent.ID),
			hist(n.ChatFilter("general"), 24*time.Hour), remove},
		{"an agent's pushing chathist goes", n.ChatStream(), n.HistoryConsumer(agent.ID),
			jetstream.ConsumerConfig{FilterSubject: n.ChatFilter("general"), DeliverSubject: wire.InboxPrefix(agent.ID) + ".x",
				InactiveThreshold: wire.HistoryInactiveThreshold}, remove},
		{"a revoked agent's chathist goes", n.ChatStream(), n.HistoryConsumer(revoked.ID),
			hist(n.ChatFilter("general"), wire.HistoryInactiveThreshold), remove},
		{"an observer's chathist on all chat stays", n.ChatStream(), n.HistoryConsumer(observer.ID),
			hist(n.Prefix()+".chat.>", wire.HistoryInactiveThreshold), keep},
		{"a transient read under another name goes", n.ChatStream(), "tail",
			hist(n.Prefix()+".chat.>", time.Minute), remove},
		{"an observer's durable under another name goes", n.ChatStream(), "tail", hist(n.Prefix()+".chat.>", 0), remove},
		{"an admin's dmhist stays", n.DMStream(), n.DMHistoryConsumer(admin.ID), spec(n.DMHistoryConsumerSpec(admin.ID)), keep},
		{"an admin's durable dmhist goes", n.DMStream(), n.DMHistoryConsumer(admin.ID), hist(n.Prefix()+".inst.>", 0), remove},
		{"a dmhist of an agent goes", n.DMStream(), n.DMHistoryConsumer(agent.ID), spec(n.DMHistoryConsumerSpec(agent.ID)), remove},
		{"a push consumer on DM goes", n.DMStream(), "spy", watch(wire.InboxPrefix(agent.ID)+".x", time.Minute), remove},
		{"an agent's presence watch stays", presence, "w1", watch(wire.InboxPrefix(agent.ID)+".w", 5*time.Second), keep},
		{"the delivery's channel-registry watch stays", wire.KVStream(n.ChannelsBucket()), "w2", watch("_INBOX_DELIVERY.w", 5*time.Second), keep},
		{"a presence watch pushing into the delivery's inbox goes: it follows presence without one", presence, "w2", watch("_INBOX_DELIVERY.w", 5*time.Second), remove},
		{"a pull watch stays", presence, "w3", hist("", time.Minute), keep},
		{"a durable on the presence bucket goes", presence, "squat", hist("", 0), remove},
		{"a watch pushing into an unknown inbox goes", presence, "w4", watch("_INBOX_NOBODY.w", 5*time.Second), remove},
		{"a revoked agent's watch goes", presence, "w5", watch(wire.InboxPrefix(revoked.ID)+".w", 5*time.Second), remove},
		{"a membership watch pushed into an agent's inbox goes", membership, "w6",
			watch(wire.InboxPrefix(agent.ID)+".w", 5*time.Second), remove},
		{"an observer's membership watch stays", membership, "w7", watch(wire.InboxPrefix(observer.ID)+".w", 5*time.Second), keep},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.decide(tc.stream, tc.consumer, tc.cfg); got.action != tc.want {
				t.Fatalf("action %d (%s); want %d", got.action, got.why, tc.want)
			}
		})
	}
}

// TestTheRuleTellsARevokedCredentialsConsumersFromAnomalies: what a revocation or an expiry
// leaves is removed as ended (logged as the revocation's own cleanup, not as a warning);
// a consumer of an id or role the registry never held is not.
func TestTheRuleTellsARevokedCredentialsConsumersFromAnomalies(t *testing.T) {
	t.Parallel()
	n := wire.NewNames("main")
	now := time.Now()
	ackWait := wire.DefaultAckWait
	revoked := provisioner.Record{ID: "GONE", Profile: provisioner.ProfileAgent, Revoked: true,
		Grants: provisioner.Grants{Role: "builder"}}
	expiredAdmin := provisioner.Record{ID: "ROOT", Profile: provisioner.ProfileAdmin, ExpiresAt: now.Add(-time.Hour)}
	r := newRegistryView(n, []provisioner.Record{revoked, expiredAdmin}, now, ackWait, "")
	spec := jsconfig.Consumer
	watch := func(deliver string) jetstream.ConsumerConfig {
		return jetstream.ConsumerConfig{DeliverSubject: deliver, AckPolicy: jetstream.AckNonePolicy, InactiveThreshold: 5 * time.Second}
	}
	presence := wire.KVStream(n.PresenceBucket())
	for _, tc := range []struct {
		name, stream, consumer string
		cfg                    jetstream.ConsumerConfig
		ended                  bool
		owner                  string
	}{
		{"a revoked agent's dm_ is its end", n.DMStream(), n.DMConsumer(revoked.ID), spec(n.DMConsumerSpec(revoked.ID, ackWait)), true, revoked.ID},
		{"a revoked agent's dlv_ is its end", n.DLVStream(), n.DLVConsumer(revoked.ID), spec(n.DLVConsumerSpec(revoked.ID, ackWait)), true, revoked.ID},
		{"the svc_ of a role only a revoked agent held is its end", n.TaskStream(), n.SvcConsumer("builder"),
			spec(n.SvcConsumerSpec("builder", ackWait)), true, "builder"},
		{"a revoked agent's watch is its end", presence, "w1", watch(wire.InboxPrefix(revoked.ID) + ".w"), true, revoked.ID},
		{"an expired admin's dmhist is its end", n.DMStream(), n.DMHistoryConsumer(expiredAdmin.ID),
			spec(n.DMHistoryConsumerSpec(expiredAdmin.ID)), true, expiredAdmin.ID},
		{"the dm_ of an id never minted is not", n.DMStream(), n.DMConsumer("NOBODY"), spec(n.DMConsumerSpec("NOBODY", ackWait)), false, "NOBODY"},
		{"the svc_ of a role nobody held is not", n.TaskStream(), n.SvcConsumer("tester"), spec(n.SvcConsumerSpec("tester", ackWait)), false, "tester"},
		{"a watch pushing into an unknown inbox is not", presence, "w2", watch("_INBOX_NOBODY.w"), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := r.decide(tc.stream, tc.consumer, tc.cfg)
			if got.action != remove || got.ended != tc.ended || got.owner != tc.owner {
				t.Fatalf("action %d, ended %v, owner %q (%s); want remove, ended %v, owner %q",
					got.action, got.ended, got.owner, got.why, tc.ended, tc.owner)
			}
		})
	}
}
