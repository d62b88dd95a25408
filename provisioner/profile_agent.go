package provisioner

import (
	"github.com/cotal-go/cotal/wire"
	"github.com/nats-io/jwt/v2"
)

// agentPermissions adds SPEC Appendix B's agent grants, in its order, then LAYOUT.md's
// "Agent credential additions". g is already defaulted and validated.
//
// Presence hardening (LAYOUT.md Trap "Presence wipe") is not a permission: the agent must
// publish to its own presence key, and a `Nats-Rollup: all` header on that publish is
// refused only by a bucket created without rollups, which the space package does.
func agentPermissions(p *jwt.Permissions, n wire.Names, id string, g Grants) {
	chat, dm, task := n.ChatStream(), n.DMStream(), n.TaskStream()
	kv := wire.KVStream(n.PresenceBucket())
	chkv := wire.KVStream(n.ChannelsBucket())
	hist, dmD := n.HistoryConsumer(id), n.DMConsumer(id)

	// SPEC §9 item 2: the live read boundary, one native subscribe grant per ACL entry with
	// wildcards preserved.
	for _, ch := range g.AllowSubscribe {
		p.Sub.Allow.Add(n.ChatFilter(ch))
	}

	// Application publish: own sender token only (SPEC §9), chat only on allowPublish channels.
	for _, ch := range g.AllowPublish {
		p.Pub.Allow.Add(n.ChatSubject(id, ch))
	}
	p.Pub.Allow.Add(
		n.Prefix()+".inst.*."+wire.Sanitize(id),
		n.Prefix()+".svc.*."+wire.Sanitize(id),
		// P.ctl.<manager>.<id>: the manager service of this binding is `delivery` (LAYOUT.md).
		n.CtlSubject(wire.DeliveryService, id),
	)
	for _, s := range []string{chat, dm, task, kv, chkv} {
		p.Pub.Allow.Add(streamAPI("INFO", s))
	}
	// SPEC §9 item 4: history reads through one pinned single-filter create per ACL entry.
	for _, ch := range g.AllowSubscribe {
		p.Pub.Allow.Add(consumerAPI("CREATE", chat, hist) + "." + n.ChatFilter(ch))
	}
	p.Pub.Allow.Add(
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
		p.Pub.Allow.Add(
			consumerAPI("INFO", task, svcD),
			consumerAPI("MSG.NEXT", task, svcD),
			ackSubject(task, svcD),
		)
	}
	// SPEC §9 item 3: the agent binds DM, TASK and backstop durables, never creates them.
	for _, s := range []string{dm, task, n.InboxStream()} {
		p.Pub.Deny.Add(createDenies(s)...)
	}

	agentLayoutAdditions(p, n, id)
}

// agentLayoutAdditions are LAYOUT.md's "Agent credential additions beyond SPEC Appendix B".
func agentLayoutAdditions(p *jwt.Permissions, n wire.Names, id string) {
	ctl := n.CtlSubject(wire.DeliveryService, id)
	dlv, dlvD := n.DLVStream(), n.DLVConsumer(id)
	// Control replies: the client names cotal.<s>.ctl.delivery.<id>.reply.<uuid>; the
	// request subject itself is Appendix B's P.ctl.<manager>.<id>, granted above.
	p.Sub.Allow.Add(ctl + ".>")
	// The trusted reader's per-member handoff, bound like dm_<id>.
	p.Pub.Allow.Add(
		consumerAPI("INFO", dlv, dlvD),
		consumerAPI("MSG.NEXT", dlv, dlvD),
		ackSubject(dlv, dlvD),
	)
	// Without delete, every presence and registry watch leaks an ordered consumer.
	p.Pub.Allow.Add(
		consumerAPI("DELETE", wire.KVStream(n.PresenceBucket()), ">"),
		consumerAPI("DELETE", wire.KVStream(n.ChannelsBucket()), ">"),
	)
	p.Pub.Deny.Add(createDenies(dlv)...)
}
