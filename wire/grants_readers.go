package wire

// observerPermissions adds SPEC Appendix B's observer grants: all chat, live and history.
func observerPermissions(p *Permissions, n Names) {
	p.Sub.Allow.add(n.Prefix() + ".chat.>")
	readerPermissions(p, n)
}

// adminPermissions adds SPEC Appendix B's admin grants: the observer's read verbs, the whole
// space's live tap and DM history. Admin still has no application publish.
//
// Appendix B's DM history verbs are on every consumer of DM (`<DM>`, `<DM>.>`), which let an
// admin redefine an agent's dm_<id> (a wider filter its owner then pulls), delete it, ack its
// messages away, or leave a push consumer delivering DMs anywhere (issue 12 item 3). They are
// narrowed to one consumer of the admin's own, dmhist_<id>, created through the pinned subject
// with the whole DM subtree as filter: the same DM history, and no verb on any other consumer.
func adminPermissions(p *Permissions, n Names, id string) {
	p.Sub.Allow.add(n.Prefix() + ".>")
	readerPermissions(p, n)
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
// two changes that keep the delivery package's `fanout` consumer on CHAT out of reach
// (LAYOUT.md Trap "Observer against delivery") and two read grants LAYOUT.md implies.
func readerPermissions(p *Permissions, n Names) {
	chat := n.ChatStream()
	kv := KVStream(n.PresenceBucket())
	chkv := KVStream(n.ChannelsBucket())
	p.Pub.Allow.add(
		streamAPI("INFO", chat),
		streamAPI("INFO", kv),
		streamAPI("INFO", chkv),
		// Appendix B also lists the bare $JS.API.CONSUMER.CREATE.<CHAT>. It is withheld: the
		// bare form takes the consumer name from the request body, so it updates any named
		// consumer, fanout included (a new filter or inactive threshold stops durable
		// delivery), and no subject deny can tell it apart. Every client that names its
		// consumers uses the extended form below.
		consumerAPI("CREATE", chat, ">"),
		consumerAPI("INFO", chat, ">"),
		consumerAPI("MSG.NEXT", chat, ">"),
		consumerAPI("DELETE", chat, ">"),
		"$JS.ACK."+chat+".>",
		consumerAPI("CREATE", kv, ">"),
		consumerAPI("INFO", kv, ">"),
		streamAPI("MSG.GET", chkv),
		consumerAPI("CREATE", chkv, ">"),
		consumerAPI("INFO", chkv, ">"),
		consumerAPI("DELETE", chkv, ">"),
		"$JS.FC.>",
	)
	// LAYOUT.md's reason for the agent's KV watch delete holds for the observer's presence
	// watch too: without it every watch leaks an ordered consumer.
	p.Pub.Allow.add(consumerAPI("DELETE", kv, ">"))
	// SPEC §8: the display-only membership feed is read by the observer and admin profiles,
	// by get and by watch (flow control is covered by $JS.FC.> above).
	mkv := KVStream(n.MembershipBucket())
	p.Pub.Allow.add(kvGetGrants(n.MembershipBucket())...)
	p.Pub.Allow.add(consumerAPI("CREATE", mkv, ">"), consumerAPI("INFO", mkv, ">"), consumerAPI("DELETE", mkv, ">"))

	fanoutDenies(p, n)
}

// fanoutDenies refuse every verb on the fan-out consumer, which the observer's CHAT wildcards
// would otherwise cover (LAYOUT.md Trap "Observer against delivery": cotal's own consumers are
// out of every non-infrastructure credential's reach, its info included), plus the bare
// create withheld above.
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
