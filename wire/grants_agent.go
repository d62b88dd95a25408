package wire

import "time"

// agentPermissions adds SPEC Appendix B's agent grants, in its order, then cotal's additions
// (docs/accounts.md "Profiles and grants"). g is already defaulted and validated.
//
// Presence hardening (docs/hostile-agents.md "Presence cannot be wiped") is not a permission:
// the agent must publish to its own presence key, and a `Nats-Rollup: all` header on that
// publish is refused only by a bucket created without rollups, which the space package does.
func agentPermissions(p *Permissions, n Names, id string, g AgentScope) {
	chat, dm, task := n.ChatStream(), n.DMStream(), n.TaskStream()
	kv := KVStream(n.PresenceBucket())
	chkv := KVStream(n.ChannelsBucket())
	hist, dmD := n.HistoryConsumer(id), n.DMConsumer(id)

	// SPEC §9 item 2: the live read boundary, one native subscribe grant per ACL entry with
	// wildcards preserved.
	for _, ch := range g.AllowSubscribe {
		p.Sub.Allow.add(n.ChatFilter(ch))
	}

	// Application publish: own sender token only (SPEC §9), chat only on allowPublish channels.
	for _, ch := range g.AllowPublish {
		p.Pub.Allow.add(n.ChatSubject(id, ch))
	}
	p.Pub.Allow.add(
		n.Prefix()+".inst.*."+Sanitize(id),
		n.Prefix()+".svc.*."+Sanitize(id),
		// P.ctl.<manager>.<id>: the manager service of this binding is `delivery`.
		n.CtlSubject(DeliveryService, id),
	)
	for _, s := range []string{chat, dm, task, kv, chkv} {
		p.Pub.Allow.add(streamAPI("INFO", s))
	}
	// SPEC §9 item 4: history reads through one pinned single-filter create per ACL entry,
	// naming exactly the consumer and filter HistoryConsumerSpec gives the client.
	for _, ch := range g.AllowSubscribe {
		p.Pub.Allow.add(pinnedCreate(n.HistoryConsumerSpec(id, ch, time.Time{})))
	}
	p.Pub.Allow.add(
		consumerAPI("INFO", chat, hist),
		consumerAPI("MSG.NEXT", chat, hist),
		consumerAPI("DELETE", chat, hist),
		consumerAPI("INFO", dm, dmD),
		consumerAPI("MSG.NEXT", dm, dmD),
		ackSubject(dm, dmD),
		consumerAPI("CREATE", kv, ">"),
		consumerAPI("INFO", kv, ">"),
		"$JS.FC.>",
		n.PresenceKVSubject(id),
		streamAPI("MSG.GET", chkv),
		consumerAPI("CREATE", chkv, ">"),
		consumerAPI("INFO", chkv, ">"),
	)
	if g.Role != "" {
		svcD := n.SvcConsumer(g.Role)
		p.Pub.Allow.add(
			consumerAPI("INFO", task, svcD),
			consumerAPI("MSG.NEXT", task, svcD),
			ackSubject(task, svcD),
		)
	}
	// SPEC §9 item 3: the agent binds DM, TASK and backstop durables, never creates them.
	for _, s := range []string{dm, task, n.InboxStream()} {
		p.Pub.Deny.add(createDenies(s)...)
	}

	agentLayoutAdditions(p, n, id)
	if g.ManagerControl {
		// A supervised agent's requests to the manager service and their replies
		// (docs/agents.md "The manager service"); no other credential can reach it.
		ctl := n.CtlSubject(ManagerService, id)
		p.Pub.Allow.add(ctl)
		p.Sub.Allow.add(ctl + ".reply.>")
	}
}

// agentLayoutAdditions are the agent grants beyond SPEC Appendix B (docs/accounts.md "Profiles
// and grants").
func agentLayoutAdditions(p *Permissions, n Names, id string) {
	ctl := n.CtlSubject(DeliveryService, id)
	dlv, dlvD := n.DLVStream(), n.DLVConsumer(id)
	// Control replies: the client names cotal.<s>.ctl.delivery.<id>.reply.<uuid>; the
	// request subject itself is Appendix B's P.ctl.<manager>.<id>, granted above.
	p.Sub.Allow.add(ctl + ".>")
	// The trusted reader's per-member handoff, bound like dm_<id>.
	p.Pub.Allow.add(
		consumerAPI("INFO", dlv, dlvD),
		consumerAPI("MSG.NEXT", dlv, dlvD),
		ackSubject(dlv, dlvD),
	)
	// Without delete, every presence and registry watch leaks an ordered consumer.
	p.Pub.Allow.add(
		consumerAPI("DELETE", KVStream(n.PresenceBucket()), ">"),
		consumerAPI("DELETE", KVStream(n.ChannelsBucket()), ">"),
	)
	p.Pub.Deny.add(createDenies(dlv)...)
	identityReads(p, n)
}

// identityReads let a client look up the name an id was minted with and the ids minted with a
// name (IdentitiesBucket), by get only: no watch, so no consumer to count or leak.
func identityReads(p *Permissions, n Names) {
	s := KVStream(n.IdentitiesBucket())
	p.Pub.Allow.add(streamAPI("INFO", s), streamAPI("MSG.GET", s))
}
