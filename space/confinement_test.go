package space_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// The confinement suite (SPEC §9, with a real server and real JWTs): raw nats.go connections
// with minted credentials against a whole mesh, asserting the broker's own refusal. Every
// refusal has a permitted twin in the same table (same credential, the nearest allowed
// subject), so a broker that let everything through fails the suite.

// world is one mesh with the cast every confinement table uses: two agents, an observer and
// an admin, plus traffic for them to read.
type world struct {
	m       *space.Mesh
	n       wire.Names
	alice   *provisioner.Credential // agent: reads general and team.>, posts general, role reviewer
	bob     *provisioner.Credential // agent: reads and posts general and random, role builder
	watcher *provisioner.Credential // observer
	root    *provisioner.Credential // admin
	bobPeer *peer
}

func newWorld(t *testing.T) *world {
	t.Helper()
	m := spacetest.New(t)
	w := &world{m: m, n: wire.NewNames("main")}
	w.alice = mint(t, m, "alice", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"},
		AllowSubscribe: []string{"general", "team.>"}, AllowPublish: []string{"general"}, Role: "reviewer"})
	w.bob = mint(t, m, "bob", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general", "random"},
		AllowPublish: []string{"general", "random"}, Role: "builder"})
	w.watcher = mint(t, m, "watcher", provisioner.ProfileObserver, provisioner.Grants{})
	w.root = mint(t, m, "root", provisioner.ProfileAdmin, provisioner.Grants{})
	w.bobPeer = newPeer(t, m, w.bob)
	// Something to read in every place a case reads: chat history, alice's DM, her role's task.
	for _, s := range []struct{ subject, channel string }{
		{w.n.ChatSubject(w.bob.ID, "general"), "general"},
		{w.n.ChatSubject(w.bob.ID, "random"), "random"},
		{w.n.InstSubject(w.alice.ID, w.bob.ID), ""},
		{w.n.SvcSubject("reviewer", w.bob.ID), ""},
	} {
		if err := store(s.subject, s.channel, nil)(context.Background(), t, w.bobPeer); err != nil {
			t.Fatalf("seed %s: %v", s.subject, err)
		}
	}
	return w
}

func TestAgentLiveReadsStayInsideAllowSubscribe(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a, n := w.alice, w.n
	run(t, w.m, []confinementCase{
		{"an agent follows its channel live", a, follow(n.ChatFilter("general"), w.bobPeer, n.ChatSubject(w.bob.ID, "general"), "general"), permitted},
		{"an agent subscribes to a channel its wildcard ACL entry covers", a, subscribe(n.ChatFilter("team.backend")), permitted},
		refuseSubscribe("an agent cannot subscribe to a channel outside allowSubscribe", a, n.ChatFilter("random")),
		refuseSubscribe("an agent cannot subscribe to all chat", a, "cotal.main.chat.>"),
		refuseSubscribe("an agent cannot subscribe to every top-level channel", a, "cotal.main.chat.*.*"),
		refuseSubscribe("an agent cannot subscribe to all DMs", a, "cotal.main.inst.>"),
		refuseSubscribe("an agent cannot listen to its own DM subject past dm_", a, "cotal.main.inst."+a.ID+".*"),
		refuseSubscribe("an agent cannot subscribe to the whole space", a, "cotal.main.>"),
		refuseSubscribe("an agent cannot subscribe to another agent's inbox", a, wire.InboxPrefix(w.bob.ID)+".>"),
		refuseSubscribe("an agent cannot listen to anycast traffic", a, "cotal.main.svc.reviewer.*"),
		refuseSubscribe("an agent cannot listen to the durable backstop", a, "cotal.main.dinbox.>"),
		refuseSubscribe("an agent cannot listen to its own durable handoff past dlv_", a, n.DLVSubject(a.ID)),
		refuseSubscribe("an agent cannot listen to raw presence writes", a, "$KV."+n.PresenceBucket()+".>"),
		refuseSubscribe("an agent cannot listen to other agents' control requests", a, "cotal.main.ctl.delivery.*"),
		refuseSubscribe("an agent cannot listen to another agent's control replies", a, n.CtlSubject(wire.DeliveryService, w.bob.ID)+".>"),
	})
}

func TestAgentPublishesOnlyAsItself(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a, n := w.alice, w.n
	run(t, w.m, []confinementCase{
		{"an agent posts on its allowPublish channel", a, store(n.ChatSubject(a.ID, "general"), "general", nil), permitted},
		{"an agent sends a DM with its own sender token", a, store(n.InstSubject(w.bob.ID, a.ID), "", nil), permitted},
		{"an agent sends anycast with its own sender token", a, store(n.SvcSubject("builder", a.ID), "", nil), permitted},
		{"an agent calls the delivery control service as itself", a, controlCall(n), permitted},
		refusePublish("an agent cannot post as another sender", a, n.ChatSubject(w.bob.ID, "general")),
		refusePublish("an agent cannot post on a channel outside allowPublish", a, n.ChatSubject(a.ID, "random")),
		refusePublish("an agent cannot post on a channel it may only read", a, n.ChatSubject(a.ID, "team.backend")),
		refusePublish("an agent cannot send itself a DM as another sender", a, n.InstSubject(a.ID, w.bob.ID)),
		refusePublish("an agent cannot send a third party a DM as another sender", a, n.InstSubject(w.watcher.ID, w.bob.ID)),
		refusePublish("an agent cannot send anycast as another sender", a, n.SvcSubject("reviewer", w.bob.ID)),
		refusePublish("an agent cannot call the control service as another sender", a, n.CtlSubject(wire.DeliveryService, w.bob.ID)),
		refusePublish("an agent cannot forge a durable copy into another agent's handoff", a, n.DLVSubject(w.bob.ID)),
		refusePublish("an agent cannot forge a durable copy into its own handoff", a, n.DLVSubject(a.ID)),
		refusePublish("an agent cannot write the durable backstop", a, n.BackstopInboxSubject(w.bob.ID)),
	})
}

func TestAgentConsumersAreBindOnly(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a, n := w.alice, w.n
	cases := []confinementCase{
		{"an agent binds its own dm_ and takes a DM", a, bind(n.DMStream(), n.DMConsumer(a.ID), true), permitted},
		{"an agent binds its own dlv_", a, bind(n.DLVStream(), n.DLVConsumer(a.ID), false), permitted},
		{"an agent binds svc_ of its role and takes a task", a, bind(n.TaskStream(), n.SvcConsumer("reviewer"), true), permitted},
	}
	own := map[string]string{
		n.DMStream():    "cotal.main.inst." + a.ID + ".*",
		n.TaskStream():  "cotal.main.svc.reviewer.*",
		n.DLVStream():   n.DLVSubject(a.ID),
		n.InboxStream(): n.BackstopInboxSubject(a.ID),
	}
	for _, stream := range []string{n.DMStream(), n.TaskStream(), n.DLVStream(), n.InboxStream()} {
		filter := own[stream]
		cfg := jetstream.ConsumerConfig{Name: "x", FilterSubject: filter, AckPolicy: jetstream.AckExplicitPolicy}
		durable := jetstream.ConsumerConfig{Durable: "x", FilterSubject: filter, AckPolicy: jetstream.AckExplicitPolicy}
		cases = append(cases,
			refuseAPI("an agent cannot create a consumer on "+stream+" by the bare subject", a,
				"$JS.API.CONSUMER.CREATE."+stream, createBody(stream, cfg)),
			refuseAPI("an agent cannot create a consumer on "+stream+" filtered to its own subjects", a,
				"$JS.API.CONSUMER.CREATE."+stream+".x."+filter, createBody(stream, cfg)),
			refuseAPI("an agent cannot create a durable on "+stream+" by the legacy subject", a,
				"$JS.API.CONSUMER.DURABLE.CREATE."+stream+".x", createBody(stream, durable)),
		)
	}
	allDMs := jetstream.ConsumerConfig{Durable: n.DMConsumer(a.ID), FilterSubject: "cotal.main.inst.>", AckPolicy: jetstream.AckExplicitPolicy}
	next := map[string]any{"batch": 1, "no_wait": true}
	cases = append(cases,
		refuseAPI("an agent cannot widen its own dm_ to every DM", a,
			"$JS.API.CONSUMER.CREATE."+n.DMStream()+"."+n.DMConsumer(a.ID)+".cotal.main.inst.>", createBody(n.DMStream(), allDMs)),
		refuseAPI("an agent cannot delete its own dm_", a, "$JS.API.CONSUMER.DELETE."+n.DMStream()+"."+n.DMConsumer(a.ID), nil),
		refuseAPI("an agent cannot inspect another agent's dm_", a, "$JS.API.CONSUMER.INFO."+n.DMStream()+"."+n.DMConsumer(w.bob.ID), nil),
		refuseAPI("an agent cannot pull from another agent's dm_", a, "$JS.API.CONSUMER.MSG.NEXT."+n.DMStream()+"."+n.DMConsumer(w.bob.ID), next),
		refusePublish("an agent cannot ack on another agent's dm_", a, "$JS.ACK."+n.DMStream()+"."+n.DMConsumer(w.bob.ID)+".1.1.1.1.0"),
		refuseAPI("an agent cannot inspect another agent's dlv_", a, "$JS.API.CONSUMER.INFO."+n.DLVStream()+"."+n.DLVConsumer(w.bob.ID), nil),
		refuseAPI("an agent cannot pull from another agent's dlv_", a, "$JS.API.CONSUMER.MSG.NEXT."+n.DLVStream()+"."+n.DLVConsumer(w.bob.ID), next),
		refuseAPI("an agent cannot inspect svc_ of a role it does not hold", a, "$JS.API.CONSUMER.INFO."+n.TaskStream()+"."+n.SvcConsumer("builder"), nil),
		refuseAPI("an agent cannot pull from svc_ of a role it does not hold", a, "$JS.API.CONSUMER.MSG.NEXT."+n.TaskStream()+"."+n.SvcConsumer("builder"), next),
		refuseAPI("an agent cannot pull from the delivery fan-out", a, "$JS.API.CONSUMER.MSG.NEXT."+n.ChatStream()+"."+wire.FanoutConsumer, next),
		refuseAPI("an agent cannot delete the delivery fan-out", a, "$JS.API.CONSUMER.DELETE."+n.ChatStream()+"."+wire.FanoutConsumer, nil),
	)
	run(t, w.m, cases)
}

func TestAgentHistoryIsPinnedToItsACL(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a, n := w.alice, w.n
	chat, hist := n.ChatStream(), n.HistoryConsumer(a.ID)
	pinned := func(channel string) string {
		return "$JS.API.CONSUMER.CREATE." + chat + "." + hist + "." + n.ChatFilter(channel)
	}
	histCfg := func(filter string) jetstream.ConsumerConfig {
		return jetstream.ConsumerConfig{Name: hist, FilterSubject: filter, AckPolicy: jetstream.AckNonePolicy,
			MemoryStorage: true, InactiveThreshold: 30 * time.Second}
	}
	general, random := n.ChatFilter("general"), n.ChatFilter("random")
	multi := histCfg("")
	multi.FilterSubjects = []string{general, random}
	run(t, w.m, []confinementCase{
		{"an agent reads a channel's history through its pinned consumer", a, readBack(chat, histCfg(general)), permitted},
		refuseAPI("an agent cannot read history of a channel outside its ACL", a, pinned("random"), createBody(chat, histCfg(random))),
		{"an agent cannot widen the pinned filter with a multi-filter body", a,
			api(pinned("general"), createBody(chat, multi)), refusedBy(server.JSConsumerMultipleFiltersNotAllowed)},
		{"an agent cannot swap the pinned filter for another in the body", a,
			api(pinned("general"), createBody(chat, histCfg(random))), refusedBy(server.JSConsumerCreateFilterSubjectMismatchErr)},
		{"an agent cannot drop the filter from the body", a,
			api(pinned("general"), createBody(chat, histCfg(""))), refusedBy(server.JSConsumerCreateFilterSubjectMismatchErr)},
		refuseAPI("an agent cannot create its history consumer without the pinned filter", a,
			"$JS.API.CONSUMER.CREATE."+chat+"."+hist, createBody(chat, histCfg(random))),
		refuseAPI("an agent cannot create a history consumer by the bare subject", a,
			"$JS.API.CONSUMER.CREATE."+chat, createBody(chat, histCfg(random))),
		refuseAPI("an agent cannot create its history consumer by the legacy durable subject", a,
			"$JS.API.CONSUMER.DURABLE.CREATE."+chat+"."+hist, createBody(chat, histCfg(random))),
		refuseAPI("an agent cannot create a history consumer under another name", a,
			"$JS.API.CONSUMER.CREATE."+chat+".x."+general, createBody(chat, histCfg(general))),
		refuseAPI("an agent cannot pull from another agent's history consumer", a,
			"$JS.API.CONSUMER.MSG.NEXT."+chat+"."+n.HistoryConsumer(w.bob.ID), map[string]any{"batch": 1}),
		{"an agent reads the channel registry with KV Get", a, registryGet(n), permitted},
	})
}

func TestAgentHasNoDirectGet(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a, n := w.alice, w.n
	cases := []confinementCase{{"an agent gets a channel registry key by STREAM.MSG.GET", a,
		api("$JS.API.STREAM.MSG.GET."+wire.KVStream(n.ChannelsBucket()),
			map[string]string{"last_by_subj": "$KV." + n.ChannelsBucket() + "." + wire.DefaultsKey}), permitted}}
	seq := map[string]int{"seq": 1}
	for _, s := range []string{n.ChatStream(), n.DMStream(), n.TaskStream(), n.InboxStream(), n.DLVStream()} {
		cases = append(cases,
			refuseAPI("an agent cannot Direct Get from "+s, a, "$JS.API.DIRECT.GET."+s, seq),
			refuseAPI("an agent cannot STREAM.MSG.GET from "+s, a, "$JS.API.STREAM.MSG.GET."+s, seq))
	}
	cases = append(cases,
		refuseAPI("an agent cannot Direct Get another agent's last DM by subject", a,
			"$JS.API.DIRECT.GET."+n.DMStream()+"."+n.InstSubject(w.bob.ID, a.ID), nil),
		refuseAPI("an agent cannot watch the membership registry", a,
			"$JS.API.CONSUMER.CREATE."+wire.KVStream(n.DurableMembersBucket()),
			createBody(wire.KVStream(n.DurableMembersBucket()), jetstream.ConsumerConfig{Name: "x"})))
	run(t, w.m, cases)
}

func TestAgentWritesOnlyItsOwnKeys(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a, n := w.alice, w.n
	own := n.PresenceKVSubject(a.ID)
	run(t, w.m, []confinementCase{
		{"an agent writes its own presence key", a, store(own, "", nil), permitted},
		{"an agent watches the presence bucket", a, watchSees(n, a.ID, nil), permitted},
		refusePublish("an agent cannot write another instance's presence key", a, n.PresenceKVSubject(w.bob.ID)),
		refusePublish("an agent cannot write the channel registry", a, "$KV."+n.ChannelsBucket()+".x"),
		refusePublish("an agent cannot rewrite the channel defaults", a, "$KV."+n.ChannelsBucket()+"."+wire.DefaultsKey),
		refusePublish("an agent cannot write the membership registry", a, "$KV."+n.DurableMembersBucket()+".general/"+a.ID),
		refusePublish("an agent cannot write its own ACL record", a, "$KV."+n.ACLBucket()+"."+a.ID),
		refusePublish("an agent cannot write the membership feed", a, "$KV."+n.MembershipFeedBucket()+"."+a.ID),
	})
}

func TestStreamsRefuseRollupTTLAndScheduleHeaders(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a, n := w.alice, w.n
	cases := []confinementCase{
		{"a rollup of all on an agent's own presence key is refused and erases nobody", a,
			rollupKeepsPresence(n, w.bobPeer, "all"), refusedBy(server.JSStreamRollupFailedF)},
		{"a subject rollup on an agent's own presence key is refused", a,
			rollupKeepsPresence(n, w.bobPeer, "sub"), refusedBy(server.JSStreamRollupFailedF)},
	}
	targets := []struct{ what, subject, channel string }{
		{"its own presence key", n.PresenceKVSubject(a.ID), ""},
		{"its own chat subject", n.ChatSubject(a.ID, "general"), "general"},
		{"a DM", n.InstSubject(w.bob.ID, a.ID), ""},
		{"an anycast", n.SvcSubject("builder", a.ID), ""},
	}
	for _, tg := range targets {
		cases = append(cases,
			confinementCase{"a plain publish on " + tg.what + " is stored", a, store(tg.subject, tg.channel, nil), permitted},
			confinementCase{"a rollup of all on " + tg.what + " is refused", a,
				store(tg.subject, tg.channel, nats.Header{"Nats-Rollup": {"all"}}), refusedBy(server.JSStreamRollupFailedF)},
			confinementCase{"a per-message TTL on " + tg.what + " is refused", a,
				store(tg.subject, tg.channel, nats.Header{"Nats-TTL": {"5s"}}), refusedBy(server.JSMessageTTLDisabledErr)},
			confinementCase{"a message schedule on " + tg.what + " is refused", a,
				store(tg.subject, tg.channel, nats.Header{"Nats-Schedule": {"@at 2030-01-01T00:00:00Z"},
					"Nats-Schedule-Target": {tg.subject}}), refusedBy(server.JSMessageSchedulesDisabledErr)},
		)
	}
	run(t, w.m, cases)
}

func TestNoProfileAdministersStreams(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	n := w.n
	chat := n.ChatStream()
	var cases []confinementCase
	for _, who := range []struct {
		name string
		cred *provisioner.Credential
	}{{"an agent", w.alice}, {"an observer", w.watcher}, {"an admin", w.root}} {
		as := who.cred
		cases = append(cases,
			confinementCase{who.name + " inspects CHAT", as, api("$JS.API.STREAM.INFO."+chat, nil), permitted},
			refuseAPI(who.name+" cannot create a stream", as, "$JS.API.STREAM.CREATE.EVIL",
				jetstream.StreamConfig{Name: "EVIL", Subjects: []string{"evil.>"}}),
			refuseAPI(who.name+" cannot update CHAT", as, "$JS.API.STREAM.UPDATE."+chat,
				jetstream.StreamConfig{Name: chat, Subjects: []string{"cotal.main.chat.>"}}),
			refuseAPI(who.name+" cannot delete CHAT", as, "$JS.API.STREAM.DELETE."+chat, nil),
			refuseAPI(who.name+" cannot purge CHAT", as, "$JS.API.STREAM.PURGE."+chat, map[string]any{}),
			refuseAPI(who.name+" cannot delete a CHAT message", as, "$JS.API.STREAM.MSG.DELETE."+chat, map[string]int{"seq": 1}),
			refuseAPI(who.name+" cannot purge DM", as, "$JS.API.STREAM.PURGE."+n.DMStream(), map[string]any{}),
			refuseAPI(who.name+" cannot purge the presence bucket", as,
				"$JS.API.STREAM.PURGE."+wire.KVStream(n.PresenceBucket()), map[string]any{}),
			refuseAPI(who.name+" cannot delete the channel registry", as,
				"$JS.API.STREAM.DELETE."+wire.KVStream(n.ChannelsBucket()), nil),
		)
	}
	run(t, w.m, cases)
}

func TestObserverReadsChatOnly(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	o, n := w.watcher, w.n
	alice := newPeer(t, w.m, w.alice)
	tail := jetstream.ConsumerConfig{Name: n.HistoryConsumer(o.ID), FilterSubject: "cotal.main.chat.>", AckPolicy: jetstream.AckNonePolicy}
	run(t, w.m, []confinementCase{
		{"an observer follows all chat live", o, follow("cotal.main.chat.>", alice, n.ChatSubject(w.alice.ID, "general"), "general"), permitted},
		{"an observer reads CHAT history with its own chathist", o, readBack(n.ChatStream(), tail), permitted},
		{"an observer watches presence", o, watchSees(n, w.bob.ID, w.bobPeer), permitted},
		{"an observer reads the channel registry", o, registryGet(n), permitted},
		refusePublish("an observer cannot post", o, n.ChatSubject(o.ID, "general")),
		refusePublish("an observer cannot send a DM", o, n.InstSubject(w.alice.ID, o.ID)),
		refusePublish("an observer cannot send anycast", o, n.SvcSubject("reviewer", o.ID)),
		refusePublish("an observer cannot write presence", o, n.PresenceKVSubject(o.ID)),
		refusePublish("an observer cannot call the control service", o, n.CtlSubject(wire.DeliveryService, o.ID)),
		refuseSubscribe("an observer cannot subscribe to DMs", o, "cotal.main.inst.>"),
		refuseSubscribe("an observer cannot subscribe to the whole space", o, "cotal.main.>"),
		refuseSubscribe("an observer cannot listen to anycast traffic", o, "cotal.main.svc.>"),
		refuseSubscribe("an observer cannot listen to durable handoffs", o, "cotal.main.dlv.>"),
		refuseAPI("an observer cannot inspect DM", o, "$JS.API.STREAM.INFO."+n.DMStream(), nil),
		refuseAPI("an observer cannot bind an agent's dm_", o, "$JS.API.CONSUMER.INFO."+n.DMStream()+"."+n.DMConsumer(w.alice.ID), nil),
		refuseAPI("an observer cannot pull an agent's dm_", o,
			"$JS.API.CONSUMER.MSG.NEXT."+n.DMStream()+"."+n.DMConsumer(w.alice.ID), map[string]any{"batch": 1, "no_wait": true}),
		refuseAPI("an observer cannot create a consumer on DM", o, "$JS.API.CONSUMER.CREATE."+n.DMStream()+".x.cotal.main.inst.>",
			createBody(n.DMStream(), jetstream.ConsumerConfig{Name: "x", FilterSubject: "cotal.main.inst.>"})),
		refuseAPI("an observer cannot Direct Get a DM", o, "$JS.API.DIRECT.GET."+n.DMStream(), map[string]int{"seq": 1}),
	})
}

func TestAdminReadsTheSpaceButPostsNothing(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r, n := w.root, w.n
	alice := newPeer(t, w.m, w.alice)
	audit := jetstream.ConsumerConfig{Name: n.DMHistoryConsumer(r.ID), FilterSubject: "cotal.main.inst.>", AckPolicy: jetstream.AckNonePolicy}
	run(t, w.m, []confinementCase{
		{"an admin taps the whole space live, DMs included", r, follow("cotal.main.>", alice, n.InstSubject(w.bob.ID, w.alice.ID), ""), permitted},
		{"an admin reads DM history", r, readBack(n.DMStream(), audit), permitted},
		refusePublish("an admin cannot post", r, n.ChatSubject(r.ID, "general")),
		refusePublish("an admin cannot send a DM", r, n.InstSubject(w.alice.ID, r.ID)),
		refusePublish("an admin cannot write presence", r, n.PresenceKVSubject(r.ID)),
		refusePublish("an admin cannot write the channel registry", r, "$KV."+n.ChannelsBucket()+".x"),
		refusePublish("an admin cannot write an ACL record", r, "$KV."+n.ACLBucket()+"."+w.alice.ID),
	})
}

// TestDeliveryConsumersAreOutOfReach covers docs/hostile-agents.md "cotal's own consumers are
// out of reach": the observer's and admin's CHAT consumer wildcards must not reach `fanout`,
// and nothing but the delivery identity touches `reader`.
func TestDeliveryConsumersAreOutOfReach(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	n := w.n
	chat, inbox, fanout, reader := n.ChatStream(), n.InboxStream(), wire.FanoutConsumer, wire.ReaderConsumer
	all := "cotal.main.chat.>"
	cfg := jetstream.ConsumerConfig{Name: fanout, FilterSubject: all, AckPolicy: jetstream.AckExplicitPolicy}
	durable := jetstream.ConsumerConfig{Durable: fanout, FilterSubject: all, AckPolicy: jetstream.AckExplicitPolicy}
	next := map[string]any{"batch": 1, "no_wait": true}
	var cases []confinementCase
	for _, who := range []struct {
		name string
		cred *provisioner.Credential
	}{{"an observer", w.watcher}, {"an admin", w.root}} {
		as := who.cred
		mine := n.HistoryConsumer(as.ID)
		own := jetstream.ConsumerConfig{Name: mine, FilterSubject: all, AckPolicy: jetstream.AckExplicitPolicy}
		cases = append(cases,
			confinementCase{who.name + " creates its own CHAT consumer", as,
				api("$JS.API.CONSUMER.CREATE."+chat+"."+mine+"."+all, createBody(chat, own)), permitted},
			refuseAPI(who.name+" cannot redefine fanout", as, "$JS.API.CONSUMER.CREATE."+chat+"."+fanout+"."+all, createBody(chat, cfg)),
			refuseAPI(who.name+" cannot redefine fanout without a filter in the subject", as, "$JS.API.CONSUMER.CREATE."+chat+"."+fanout, createBody(chat, cfg)),
			refuseAPI(who.name+" cannot redefine fanout by the bare subject", as, "$JS.API.CONSUMER.CREATE."+chat, createBody(chat, cfg)),
			refuseAPI(who.name+" cannot redefine fanout by the legacy durable subject", as, "$JS.API.CONSUMER.DURABLE.CREATE."+chat+"."+fanout, createBody(chat, durable)),
			refuseAPI(who.name+" cannot pull from fanout", as, "$JS.API.CONSUMER.MSG.NEXT."+chat+"."+fanout, next),
			refuseAPI(who.name+" cannot delete fanout", as, "$JS.API.CONSUMER.DELETE."+chat+"."+fanout, nil),
			refuseAPI(who.name+" cannot inspect fanout", as, "$JS.API.CONSUMER.INFO."+chat+"."+fanout, nil),
			refuseAPI(who.name+" cannot pause fanout", as, "$JS.API.CONSUMER.PAUSE."+chat+"."+fanout,
				map[string]any{"pause_until": time.Now().Add(time.Hour)}),
			refuseAPI(who.name+" cannot reset fanout", as, "$JS.API.CONSUMER.RESET."+chat+"."+fanout, map[string]any{}),
			refusePublish(who.name+" cannot ack for fanout", as, "$JS.ACK."+chat+"."+fanout+".1.1.1.1.0"),
			refuseAPI(who.name+" cannot inspect reader", as, "$JS.API.CONSUMER.INFO."+inbox+"."+reader, nil),
			refuseAPI(who.name+" cannot pull from reader", as, "$JS.API.CONSUMER.MSG.NEXT."+inbox+"."+reader, next),
			refuseAPI(who.name+" cannot delete reader", as, "$JS.API.CONSUMER.DELETE."+inbox+"."+reader, nil),
			refusePublish(who.name+" cannot ack for reader", as, "$JS.ACK."+inbox+"."+reader+".1.1.1.1.0"),
		)
	}
	run(t, w.m, cases)
}

// follow subscribes p to filter, has sender store a message on subject, and requires it to
// arrive live.
func follow(filter string, sender *peer, subject, channel string) attempt {
	return func(ctx context.Context, t *testing.T, p *peer) error {
		sub, err := p.nc.SubscribeSync(filter)
		if err != nil {
			return err
		}
		if err := p.settle(); err != nil {
			return err
		}
		if err := store(subject, channel, nil)(ctx, t, sender); err != nil {
			t.Fatalf("sender %s: %v", sender.cred.Name, err)
		}
		msg, err := sub.NextMsg(answerWait)
		if err != nil {
			return fmt.Errorf("nothing arrived on %s: %w", filter, err)
		}
		if msg.Subject != subject {
			return fmt.Errorf("got a message on %s, want %s", msg.Subject, subject)
		}
		return nil
	}
}

// readBack creates cfg on stream through the JetStream client (which uses the filtered create
// subject for a named single-filter consumer), requires one stored message, and deletes it.
func readBack(stream string, cfg jetstream.ConsumerConfig) attempt {
	return func(ctx context.Context, t *testing.T, p *peer) error {
		js := p.jetStream(t)
		cons, err := js.CreateConsumer(ctx, stream, cfg)
		if err != nil {
			return p.explain(err)
		}
		defer func() {
			if err := js.DeleteConsumer(ctx, stream, cfg.Name); err != nil {
				t.Errorf("delete consumer %s: %v", cfg.Name, p.explain(err))
			}
		}()
		return takeOne(ctx, p, cons, false)
	}
}

// bind binds an existing consumer (CONSUMER.INFO) and pulls from it; with want it requires a
// message and acknowledges it, else a pull that finds nothing is enough.
func bind(stream, name string, want bool) attempt {
	return func(ctx context.Context, t *testing.T, p *peer) error {
		cons, err := p.jetStream(t).Consumer(ctx, stream, name)
		if err != nil {
			return p.explain(err)
		}
		if !want {
			batch, err := cons.FetchNoWait(1)
			if err != nil {
				return p.explain(err)
			}
			for range batch.Messages() {
			}
			return p.explain(batch.Error())
		}
		return takeOne(ctx, p, cons, true)
	}
}

func takeOne(ctx context.Context, p *peer, cons jetstream.Consumer, ack bool) error {
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(answerWait))
	if err != nil {
		return p.explain(err)
	}
	got := 0
	for msg := range batch.Messages() {
		got++
		if ack {
			if err := msg.DoubleAck(ctx); err != nil {
				return p.explain(err)
			}
		}
	}
	if err := batch.Error(); err != nil {
		return p.explain(err)
	}
	if got == 0 {
		return errors.New("the consumer delivered nothing")
	}
	return nil
}

// watchSees has writer (or p itself, when writer is nil) put its own presence key, then
// requires p's watch of that key to show it.
func watchSees(n wire.Names, key string, writer *peer) attempt {
	return func(ctx context.Context, t *testing.T, p *peer) error {
		if writer == nil {
			writer = p
		}
		kv, err := writer.jetStream(t).KeyValue(ctx, n.PresenceBucket())
		if err != nil {
			return writer.explain(err)
		}
		if _, err := kv.Put(ctx, key, []byte(`{}`)); err != nil {
			return writer.explain(err)
		}
		return presenceOf(ctx, t, p, n, key)
	}
}

// presenceOf requires key to be present in the presence bucket, as p's watch shows it.
func presenceOf(ctx context.Context, t *testing.T, p *peer, n wire.Names, key string) error {
	kv, err := p.jetStream(t).KeyValue(ctx, n.PresenceBucket())
	if err != nil {
		return p.explain(err)
	}
	watch, err := kv.Watch(ctx, key)
	if err != nil {
		return p.explain(err)
	}
	defer watch.Stop()
	for {
		select {
		case e := <-watch.Updates():
			if e == nil {
				return fmt.Errorf("presence key %s is gone", key)
			}
			if e.Operation() == jetstream.KeyValuePut {
				return nil
			}
		case <-ctx.Done():
			return p.explain(ctx.Err())
		}
	}
}

// rollupKeepsPresence has bob announce himself, then p publish its own presence key with a
// Nats-Rollup header (docs/hostile-agents.md "Presence cannot be wiped"). It returns the
// publish's error, or an error of its own when bob's presence did not survive.
func rollupKeepsPresence(n wire.Names, bob *peer, kind string) attempt {
	return func(ctx context.Context, t *testing.T, p *peer) error {
		if err := watchSees(n, bob.cred.ID, bob)(ctx, t, bob); err != nil {
			t.Fatalf("bob announces himself: %v", err)
		}
		err := store(n.PresenceKVSubject(p.cred.ID), "", nats.Header{"Nats-Rollup": {kind}})(ctx, t, p)
		if gone := presenceOf(ctx, t, p, n, bob.cred.ID); gone != nil {
			return fmt.Errorf("after the rollup (%v): %w", err, gone)
		}
		return err
	}
}

// registryGet reads `=defaults` from the channel registry with the KV client.
func registryGet(n wire.Names) attempt {
	return func(ctx context.Context, t *testing.T, p *peer) error {
		kv, err := p.jetStream(t).KeyValue(ctx, n.ChannelsBucket())
		if err != nil {
			return p.explain(err)
		}
		_, err = kv.Get(ctx, wire.DefaultsKey)
		return p.explain(err)
	}
}

// controlCall asks the delivery service for p's memberships on p's own control subject, with
// the reply inside its own .reply. subtree (docs/storage.md "Control service").
func controlCall(n wire.Names) attempt {
	return func(_ context.Context, t *testing.T, p *peer) error {
		subject := n.CtlSubject(wire.DeliveryService, p.cred.ID)
		body, err := json.Marshal(wire.ControlRequest{Op: wire.OpListMemberships, Args: json.RawMessage(`{}`),
			From: wire.EndpointRef{ID: p.cred.ID, Name: p.cred.Name}})
		if err != nil {
			t.Fatal(err)
		}
		msg, err := p.request(subject, subject+".reply."+wire.NewMessageID(), nil, body)
		if err != nil {
			return err
		}
		var reply wire.ControlReply
		if err := json.Unmarshal(msg.Data, &reply); err != nil {
			return fmt.Errorf("control reply %q: %w", msg.Data, err)
		}
		if !reply.OK {
			return fmt.Errorf("control service refused: %s", reply.Error)
		}
		return nil
	}
}

func TestCredentialLifecycleCutsConnectionsOff(t *testing.T) {
	t.Parallel()
	m := spacetest.New(t)
	n := wire.NewNames("main")
	general := provisioner.Grants{Subscribe: []string{"general"}}

	t.Run("an expired credential is disconnected and cannot connect again", func(t *testing.T) {
		t.Parallel()
		cred := mintWith(t, m, provisioner.MintRequest{Space: "main", Name: "brief", Profile: provisioner.ProfileAgent,
			Grants: general, ExpiresIn: 2 * time.Second})
		live := watchConn(t, m, cred) // the twin: it connects while the credential is valid
		live.cutOff(t, nats.ErrAuthExpired)
		refusedConnect(t, m, cred)
	})

	t.Run("a revoked credential is disconnected and cannot connect again", func(t *testing.T) {
		t.Parallel()
		cred := mint(t, m, "revoked", provisioner.ProfileAgent, general)
		live := watchConn(t, m, cred)
		if err := m.Revoke(context.Background(), "main", cred.ID); err != nil {
			t.Fatal(err)
		}
		live.cutOff(t, nats.ErrAuthRevoked)
		refusedConnect(t, m, cred)
	})

	t.Run("a narrower re-mint cuts off the old credential and confines the new one", func(t *testing.T) {
		t.Parallel()
		old := mint(t, m, "carol", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"},
			AllowSubscribe: []string{"general", "team.>"}, AllowPublish: []string{"general"}})
		run(t, m, []confinementCase{
			{"the old credential reads team.>", old, subscribe(n.ChatFilter("team.backend")), permitted},
			{"the old credential posts on general", old, store(n.ChatSubject(old.ID, "general"), "general", nil), permitted},
		})
		live := watchConn(t, m, old)
		identity, err := nkeys.FromSeed(old.Seed)
		if err != nil {
			t.Fatal(err)
		}
		narrow := mintWith(t, m, provisioner.MintRequest{Space: "main", Name: "carol", Profile: provisioner.ProfileAgent,
			Grants: provisioner.Grants{Subscribe: []string{"general"}}, Identity: identity})
		if narrow.ID != old.ID {
			t.Fatalf("re-mint changed the instance id from %s to %s", old.ID, narrow.ID)
		}
		live.cutOff(t, nats.ErrAuthRevoked)
		refusedConnect(t, m, old)
		run(t, m, []confinementCase{
			{"the new credential still reads general", narrow, subscribe(n.ChatFilter("general")), permitted},
			refuseSubscribe("the new credential no longer reads team.>", narrow, n.ChatFilter("team.backend")),
			refusePublish("the new credential no longer posts on general", narrow, n.ChatSubject(narrow.ID, "general")),
			refuseAPI("the new credential no longer reads team.> history", narrow,
				"$JS.API.CONSUMER.CREATE."+n.ChatStream()+"."+n.HistoryConsumer(narrow.ID)+"."+n.ChatFilter("team.>"),
				createBody(n.ChatStream(), jetstream.ConsumerConfig{Name: n.HistoryConsumer(narrow.ID), FilterSubject: n.ChatFilter("team.>")})),
		})
	})
}

func TestSpacesAreSeparateAccounts(t *testing.T) {
	t.Parallel()
	m := spacetest.New(t, func(o *space.Options) { o.Spaces = []string{"a", "b"} })
	na, nb := wire.NewNames("a"), wire.NewNames("b")
	// One key minted in both spaces: every per-identity name (inbox, consumers) is the same
	// string in a and in b, so only the account boundary keeps them apart.
	identity, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	twin := func(space string) *provisioner.Credential {
		return mintWith(t, m, provisioner.MintRequest{Space: space, Name: "twin", Profile: provisioner.ProfileAgent,
			Grants: provisioner.Grants{Subscribe: []string{"general"}, AllowPublish: []string{"general"}}, Identity: identity})
	}
	inA, inB := twin("a"), twin("b")
	adminA := mintWith(t, m, provisioner.MintRequest{Space: "a", Name: "root", Profile: provisioner.ProfileAdmin})
	hist := na.HistoryConsumer(inA.ID)
	run(t, m, []confinementCase{
		{"an agent of a posts in a", inA, store(na.ChatSubject(inA.ID, "general"), "general", nil), permitted},
		refusePublish("an agent of a cannot post in b", inA, nb.ChatSubject(inA.ID, "general")),
		{"an agent of a follows its channel in a", inA, subscribe(na.ChatFilter("general")), permitted},
		refuseSubscribe("an agent of a cannot subscribe to space b", inA, "cotal.b.>"),
		refuseSubscribe("an admin of a cannot subscribe to space b", adminA, "cotal.b.>"),
		{"an admin of a inspects CHAT_a", adminA, api("$JS.API.STREAM.INFO."+na.ChatStream(), nil), permitted},
		refuseAPI("an admin of a cannot inspect CHAT_b", adminA, "$JS.API.STREAM.INFO."+nb.ChatStream(), nil),
		refuseAPI("an agent of a cannot read history in b", inA,
			"$JS.API.CONSUMER.CREATE."+nb.ChatStream()+"."+hist+"."+nb.ChatFilter("general"),
			createBody(nb.ChatStream(), jetstream.ConsumerConfig{Name: hist, FilterSubject: nb.ChatFilter("general")})),
	})

	t.Run("a JetStream answer on the twin's inbox in b does not reach a", func(t *testing.T) {
		pa, pb := newPeer(t, m, inA), newPeer(t, m, inB)
		inbox := wire.InboxPrefix(inA.ID) + ".shared"
		subA, _ := pa.nc.SubscribeSync(inbox)
		subB, _ := pb.nc.SubscribeSync(inbox)
		if err := errors.Join(pa.settle(), pb.settle()); err != nil {
			t.Fatal(err)
		}
		msg := &nats.Msg{Subject: nb.ChatSubject(inB.ID, "general"), Reply: inbox, Data: envelope(t, inB, "general", "in b")}
		if err := errors.Join(pb.nc.PublishMsg(msg), pb.settle()); err != nil {
			t.Fatal(err)
		}
		if _, err := subB.NextMsg(answerWait); err != nil {
			t.Fatalf("b's own subscriber got no PubAck: %v", err)
		}
		// JetStream queued its answer to every subscriber of b before b read it; a's PONG
		// comes after anything queued for a.
		if err := pa.settle(); err != nil {
			t.Fatal(err)
		}
		if pending, _, _ := subA.Pending(); pending != 0 {
			t.Fatalf("a's subscriber on the same subject got %d messages from b", pending)
		}
	})

	t.Run("space b's messages are not stored in space a's JetStream", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*answerWait)
		defer cancel()
		pa, pb := newPeer(t, m, inA), newPeer(t, m, inB)
		usage := func(p *peer) uint64 {
			info, err := p.jetStream(t).AccountInfo(ctx)
			if err != nil {
				t.Fatal(p.explain(err))
			}
			return info.Memory
		}
		const size = 64 << 10
		a0, b0 := usage(pa), usage(pb)
		big := strings.Repeat("x", size)
		if _, err := pb.request(nb.ChatSubject(inB.ID, "general"), "", nil, envelope(t, inB, "general", big)); err != nil {
			t.Fatal(err)
		}
		if a1, b1 := usage(pa), usage(pb); b1 < b0+size || a1 >= a0+size {
			t.Fatalf("after storing %d bytes in b: a's JetStream memory %d -> %d, b's %d -> %d", size, a0, a1, b0, b1)
		}
	})
}
