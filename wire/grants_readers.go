package wire

// observerPermissions adds SPEC Appendix B's observer grants: all chat, live and history.
func observerPermissions(p *Permissions, n Names, id string) {
	p.Sub.Allow.add(n.Prefix() + ".chat.>")
	readerPermissions(p, n, id)
}

// adminPermissions adds SPEC Appendix B's admin grants: the observer's read verbs, the whole
// space's live view (Endpoint.Follow) and DM history. Admin still has no application publish.
//
// Appendix B's DM history verbs are on every consumer of DM (`<DM>`, `<DM>.>`), which let an
// admin redefine an agent's dm_<id> (a wider filter its owner then pulls), delete it, ack its
// messages away, or leave a push consumer delivering DMs anywhere (docs/hostile-agents.md
// "Nothing outlives its grants"). They are narrowed to one consumer of the admin's own,
// dmhist_<id>, created through the pinned subject with the whole DM subtree as filter: the same
// DM history, and no verb on any other consumer.
func adminPermissions(p *Permissions, n Names, id string) {
	p.Sub.Allow.add(n.Prefix() + ".>")
	readerPermissions(p, n, id)
	h := n.DMHistoryConsumerSpec(id)
	p.Pub.Allow.add(
		streamAPI("INFO", h.Stream),
		pinnedCreate(h),
		consumerAPI("INFO", h.Stream, h.Name),
		consumerAPI("MSG.NEXT", h.Stream, h.Name),
		consumerAPI("DELETE", h.Stream, h.Name),
		ackSubject(h.Stream, h.Name),
	)
}

// readerPermissions are the observer's pub grants of SPEC Appendix B, shared with admin, with
// the CHAT consumer verbs narrowed to the reader's own chathist_<id> and two read grants the
// readers need.
//
// Appendix B grants create, info, pull, delete and ack on every CHAT consumer (`<CHAT>`,
// `<CHAT>.>`). That reaches the delivery package's `fanout` (docs/hostile-agents.md "cotal's
// own consumers are out of reach") and every agent's chathist_<id>: an observer could redefine
// an agent's history consumer to all chat and let the agent pull it, drain it, or delete it
// mid-read, and nothing may redefine, drain or delete another identity's consumers
// (docs/hostile-agents.md "Nothing outlives its grants"). The reader gets the agent's shape
// instead: one chathist_<id> of its own, created through the pinned subject with any filter
// inside the chat subtree, which is the history a reader of all chat needs and what the
// endpoint package's history read uses.
func readerPermissions(p *Permissions, n Names, id string) {
	chat := n.ChatStream()
	kv := KVStream(n.PresenceBucket())
	chkv := KVStream(n.ChannelsBucket())
	hist := n.HistoryConsumer(id)
	p.Pub.Allow.add(
		streamAPI("INFO", chat),
		streamAPI("INFO", kv),
		streamAPI("INFO", chkv),
		consumerAPI("CREATE", chat, hist)+"."+n.Prefix()+".chat.>",
		consumerAPI("INFO", chat, hist),
		consumerAPI("MSG.NEXT", chat, hist),
		consumerAPI("DELETE", chat, hist),
		ackSubject(chat, hist),
		consumerAPI("CREATE", kv, ">"),
		consumerAPI("INFO", kv, ">"),
		streamAPI("MSG.GET", chkv),
		consumerAPI("CREATE", chkv, ">"),
		consumerAPI("INFO", chkv, ">"),
		consumerAPI("DELETE", chkv, ">"),
		"$JS.FC.>",
	)
	// The reason for the agent's KV watch delete holds for the observer's presence watch too:
	// without it every watch leaks an ordered consumer.
	p.Pub.Allow.add(consumerAPI("DELETE", kv, ">"))
	// SPEC §8: the display-only membership feed is read by the observer and admin profiles,
	// by get and by watch (flow control is covered by $JS.FC.> above).
	mkv := KVStream(n.MembershipFeedBucket())
	p.Pub.Allow.add(kvGetGrants(n.MembershipFeedBucket())...)
	p.Pub.Allow.add(consumerAPI("CREATE", mkv, ">"), consumerAPI("INFO", mkv, ">"), consumerAPI("DELETE", mkv, ">"))

	identityReads(p, n)
	fanoutDenies(p, n)
}

// fanoutDenies refuse every verb on the fan-out consumer, which Appendix B's CHAT wildcards for
// observers would cover (docs/hostile-agents.md "cotal's own consumers are out of reach":
// cotal's own consumers are out of every non-infrastructure credential's reach, its info
// included), plus the bare create. The reader's own grants above no longer reach it; the denies
// stay so that a later allow cannot bring it back into reach by accident.
func fanoutDenies(p *Permissions, n Names) {
	chat, f := n.ChatStream(), FanoutConsumer
	p.Pub.Deny.add(
		"$JS.API.CONSUMER.CREATE."+chat,
		consumerAPI("CREATE", chat, f),
		consumerAPI("CREATE", chat, f)+".>",
		consumerAPI("DURABLE.CREATE", chat, f),
		consumerAPI("DELETE", chat, f),
		consumerAPI("MSG.NEXT", chat, f),
		consumerAPI("INFO", chat, f),
		ackSubject(chat, f),
	)
}
