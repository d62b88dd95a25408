package wire

// A leaf link (docs/accounts.md "Leaf links") binds a space's agent account on one mesh (the
// leaf, a laptop) to the same space's agent account on another (the hub). Each mesh keeps its
// own JetStream: streams, buckets, consumers and the JetStream API never cross. What crosses is
// live traffic that each side then stores for its own agents: a chat message or DM that reaches
// the other side over the link is captured there by that side's own service imports, as if one
// of its agents had published it. Presence records cannot cross as they are: nats-server denies
// $JS.API.>, $KV.> and $OBJ.> on every leaf connection of an account between servers with
// JetStream. So each side's mesh relays them (LeafRelayPermissions): a write of one of its
// agents to the presence bucket crosses as LeafPresenceSubject, and the other side's relay
// writes it to its own bucket, so each roster lists both sides' agents, and the other side's
// expire on their own (the bucket's TTL) once the link is down.

// LeafSubjects are the subjects that cross a leaf link, both ways, while it is up: live chat
// (CHAT_<s> on each side stores what reaches it, and each side's fan-out copies it to its own
// durable members), DMs (each side's DM_<s> stores them, so a DM reaches an agent of either
// side; the side without the recipient reclaims its copy as a DM to an id it does not know),
// and relayed presence records (LeafPresenceSubject), which no stream captures.
func (n Names) LeafSubjects() []string {
	p := n.Prefix()
	return []string{p + ".chat.>", p + ".inst.>", n.LeafPresenceFilter()}
}

// LeafPresenceSubject is cotal.<s>.leaf.presence.<id>: instance id's presence record, or its
// deletion, relayed across a leaf link with the headers of the bucket write.
func (n Names) LeafPresenceSubject(id string) string {
	return n.Prefix() + ".leaf.presence." + Sanitize(id)
}

// LeafPresenceFilter is cotal.<s>.leaf.presence.*: every relayed presence record.
func (n Names) LeafPresenceFilter() string { return n.Prefix() + ".leaf.presence.*" }

// LeafRelayPermissions are the permissions of a mesh's presence relay on a leaf link, a
// connection in the agent account: it reads every presence write of the side's agents, sends
// each across as LeafPresenceSubject, and writes what arrives from the other side to the
// presence bucket.
func LeafRelayPermissions(n Names) Permissions {
	var p Permissions
	for _, s := range []string{"$KV." + n.PresenceBucket() + ".*", n.LeafPresenceFilter()} {
		p.Pub.Allow.add(s)
		p.Sub.Allow.add(s)
	}
	return p
}

// LeafLocalSubjects are the subjects of StorageServiceSubjects, and the control services,
// that must not cross a leaf link, denied in both directions by the leaf mesh itself:
// anycast tasks (a task stored on both sides would be taken twice), the delivery control
// service, presence bucket writes (relayed as LeafPresenceSubject instead), and the
// JetStream API, acks and flow control, which address one side's streams only.
func (n Names) LeafLocalSubjects() []string {
	local := []string{n.Prefix() + ".ctl.>"}
	for _, s := range n.StorageServiceSubjects() {
		if !contains(n.LeafSubjects(), s) {
			local = append(local, s)
		}
	}
	return local
}

// LeafPermissions are the leaf profile's permissions: the user a leaf mesh's link connects as
// may publish LeafSubjects into the hub's agent account and receive LeafSubjects from it, and
// nothing else. The hub enforces both directions on the link and tells the leaf.
func LeafPermissions(n Names) Permissions {
	var p Permissions
	p.Pub.Allow.add(n.LeafSubjects()...)
	p.Sub.Allow.add(n.LeafSubjects()...)
	return p
}
