package wire

// provisionerPermissions scope cotal's provisioner connection to one space's setup work
// (SPEC §8, §9 item 3, docs/accounts.md "Profiles and grants"). It holds no chat, DM or
// backstop content grant.
func provisionerPermissions(p *Permissions, n Names) {
	// Create, or reconcile the settings of, every stream and KV bucket of the space, and
	// inspect it. No delete or message-level verb; the purges are CHAT's, with which an
	// operator removes a channel through the admin socket (`cotal channels rm`), DM's, with
	// which the mesh reclaims DMs to ids that are no agent of the space and DMs already
	// acknowledged (a full DM stream refuses new DMs rather than evict), and TASK's, with
	// which it reclaims tasks for roles no agent holds and a sender's tasks past its share of
	// a filling store. TASK's message get serves that share: the broker counts a subject's
	// messages but not its bytes, so the mesh reads the size of a sender's newest task.
	for _, s := range n.Streams() {
		p.Pub.Allow.add(streamAPI("CREATE", s.Name), streamAPI("UPDATE", s.Name), streamAPI("INFO", s.Name))
	}
	p.Pub.Allow.add(streamAPI("PURGE", n.ChatStream()), streamAPI("PURGE", n.DMStream()), streamAPI("PURGE", n.TaskStream()))
	p.Pub.Allow.add(streamAPI("MSG.GET", n.TaskStream()))
	// SPEC §9 item 3: pre-create the bind-only dm_<id>, svc_<role> and dlv_<id> durables, and
	// delete them when an instance is retired. Pull and ack are withheld: the provisioner never
	// reads what they hold.
	for _, s := range []string{n.DMStream(), n.TaskStream(), n.DLVStream()} {
		p.Pub.Allow.add(consumerAPI("CREATE", s, ">"), consumerAPI("INFO", s, ">"), consumerAPI("DELETE", s, ">"))
	}
	// The consumer reconciler (docs/hostile-agents.md "Nothing outlives its grants"): list
	// every consumer of every stream, configs only, and delete those no rule keeps. The
	// delivery service's own two are out of its reach like everyone else's.
	for _, s := range n.Streams() {
		p.Pub.Allow.add("$JS.API.CONSUMER.LIST."+s.Name, consumerAPI("DELETE", s.Name, ">"))
	}
	p.Pub.Deny.add(consumerAPI("DELETE", n.ChatStream(), FanoutConsumer), consumerAPI("DELETE", n.InboxStream(), ReaderConsumer))
	// Pull requests whose requester is gone (docs/durable.md "Pull requests nobody holds"):
	// the pulls of the bind-only durables, to learn each one's response subject and requester
	// (requests, no content); the response subject of a pull whose requester's connection
	// ended, to hand back at once, with a nak, a copy the broker gives it; and naks of the
	// copies of a durable no connection holds any more. What it receives there it never reads.
	for _, s := range []string{n.DMStream(), n.TaskStream(), n.DLVStream()} {
		p.Sub.Allow.add("$JS.API.CONSUMER.MSG.NEXT." + s + ".>")
		p.Pub.Allow.add("$JS.ACK." + s + ".>")
	}
	p.Sub.Allow.add(ResponseSubjects)
	// The broker's audit of every JetStream API call in the account, so that each consumer
	// create or update is judged as it happens rather than at the next periodic pass.
	p.Sub.Allow.add("$JS.EVENT.ADVISORY.API")
	// The privileged registries it alone writes (SPEC §7, docs/storage.md): the channel registry
	// with =defaults, and the ACL and identity records written at mint, re-mint and revoke.
	// Gets serve create-if-absent and compare-and-set writes.
	for _, b := range []string{n.ChannelsBucket(), n.ACLBucket(), n.IdentitiesBucket()} {
		p.Pub.Allow.add(kvKeys(b))
		p.Pub.Allow.add(kvGetGrants(b)...)
	}
}

// DeliveryControlPermissions scope the delivery control service's listener, which runs in a
// space's agent account beside the requesters (wire/accounts.go) so that it sees each
// request's own reply subject: requests from any sender, answers only inside a request's
// own .reply. subtree, the subjects the client names. Its work on the registry and streams
// goes through the delivery identity in storage.
func DeliveryControlPermissions(n Names) Permissions {
	var p Permissions
	ctl := n.Prefix() + ".ctl." + DeliveryService
	p.Sub.Allow.add(ctl + ".*")
	p.Pub.Allow.add(ctl + ".*.reply.>")
	return p
}

// ManagerControlPermissions are the manager control service's: take requests on
// cotal.<s>.ctl.manager.* and answer inside each one's reply subtree.
func ManagerControlPermissions(n Names) Permissions {
	var p Permissions
	ctl := n.Prefix() + ".ctl." + ManagerService
	p.Sub.Allow.add(ctl + ".*")
	p.Pub.Allow.add(ctl + ".*.reply.>")
	return p
}

// deliveryPermissions scope the durable backstop (SPEC §4, §8; docs/durable.md and
// docs/storage.md "Control service") to one space: exactly what the delivery service uses, and
// the delivery tests run the service under nothing more. It reads chat content through its own
// fanout consumer only and writes nothing an agent reads except DLV handoffs and control
// replies. The read ACL comes from the registry in process on the node with the key store; a
// cluster node without it reads the cotal_acl_<s> records, which only the provisioner writes
// and, with the agents in their own account, no PubAck can reach.
func deliveryPermissions(p *Permissions, n Names) {
	chat := n.ChatStream()
	// Its two durables, fanout on CHAT and reader on INBOX: create with the filter pinned in
	// the subject, inspect, pull and ack. No delete: losing either one stops durable delivery.
	for _, c := range []ConsumerSpec{n.FanoutConsumerSpec(), n.ReaderConsumerSpec()} {
		p.Pub.Allow.add(
			pinnedCreate(c),
			consumerAPI("INFO", c.Stream, c.Name),
			consumerAPI("MSG.NEXT", c.Stream, c.Name),
			ackSubject(c.Stream, c.Name),
		)
	}
	// The CHAT frontier (last sequence), taken as join and leave cursors.
	p.Pub.Allow.add(streamAPI("INFO", chat))
	// The fan-out hands copies to DLV, or writes INBOX entries the trusted reader hands over
	// once it can decide them.
	p.Pub.Allow.add(n.Prefix()+".dinbox.>", n.Prefix()+".dlv.>")
	// A re-mint that narrows a member's read ACL takes the handed-over copies of the channels
	// it lost back out of DLV, read and deleted one by one (docs/durable.md "Narrowing a read
	// ACL").
	dlv := n.DLVStream()
	p.Pub.Allow.add(streamAPI("INFO", dlv), streamAPI("MSG.GET", dlv), streamAPI("MSG.DELETE", dlv))
	// The hand-over counts a member's unacknowledged copies on dlv_<id> before a copy would
	// evict one unread (docs/durable.md "DLV hand-over").
	p.Pub.Allow.add(consumerAPI("INFO", dlv, "*"))
	// The membership registry it alone writes (SPEC §7), re-read by subject after a
	// compare-and-set conflict.
	p.Pub.Allow.add(kvKeys(n.DurableMembersBucket()), streamAPI("MSG.GET", KVStream(n.DurableMembersBucket())))
	// One long-lived watch each on members, the channel registry and, on a cluster node without
	// the key store, the ACL and identity records (docs/durable.md "Views kept in memory"):
	// bind, an ordered consumer with flow control, its delete.
	for _, b := range []string{n.DurableMembersBucket(), n.ChannelsBucket(), n.ACLBucket(), n.IdentitiesBucket()} {
		s := KVStream(b)
		p.Pub.Allow.add(streamAPI("INFO", s), consumerAPI("CREATE", s, ">"),
			consumerAPI("DELETE", s, ">"), "$JS.FC."+s+".>")
	}
	// Presence is followed without a consumer, which agents could starve by holding the
	// bucket's max_consumers (docs/hostile-agents.md "Bounded shares"; delivery/follow.go):
	// every write to the bucket as it is published in storage, and a snapshot of the current
	// rows, listed by subject and read one by one.
	presence := KVStream(n.PresenceBucket())
	p.Sub.Allow.add("$KV." + n.PresenceBucket() + ".>")
	p.Pub.Allow.add(streamAPI("INFO", presence), streamAPI("MSG.GET", presence))
	// The backstop lease of a cluster (BackstopBucket): create, renew by compare-and-set and
	// release its one key, and read it back when a create finds a deleted one.
	p.Pub.Allow.add("$KV." + n.BackstopBucket() + "." + BackstopLeaseKey)
	p.Pub.Allow.add(kvGetGrants(n.BackstopBucket())...)
}
