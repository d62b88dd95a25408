package wire

// A leaf link (issue 14) binds a space's agent account on one mesh (the leaf, a laptop) to the
// same space's agent account on another (the hub). Each mesh keeps its own JetStream: streams,
// buckets, consumers and the JetStream API never cross. What crosses is live traffic that each
// side then stores for its own agents: a chat message or DM that reaches the other side over
// the link is captured there by that side's own service imports, as if one of its agents had
// published it. Presence records do not cross: nats-server denies $JS.API.>, $KV.> and $OBJ.>
// on every leaf connection of an account between servers with JetStream, so each side's
// roster lists its own agents only.

// LeafSubjects are the subjects that cross a leaf link, both ways, while it is up: live chat
// (CHAT_<s> on each side stores what reaches it, and each side's fan-out copies it to its own
// durable members) and DMs (each side's DM_<s> stores them, so a DM reaches an agent of either
// side; the side without the recipient reclaims its copy as a DM to an id it does not know).
func (n Names) LeafSubjects() []string {
	p := n.Prefix()
	return []string{p + ".chat.>", p + ".inst.>"}
}

// LeafLocalSubjects are the subjects of StorageServiceSubjects that must not cross a leaf
// link, denied in both directions by the leaf mesh itself: anycast tasks (a task stored on
// both sides would be taken twice), the delivery control service, presence records, and the
// JetStream API, acks and flow control, which address one side's streams only.
func (n Names) LeafLocalSubjects() []string {
	var local []string
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
