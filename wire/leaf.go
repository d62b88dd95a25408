package wire

import "strings"

// A leaf link (docs/leaf.md, docs/accounts.md "Leaf links") binds a space's agent account on
// one mesh (the leaf, a laptop) to the same space's agent account on another (the hub). Each
// mesh keeps its own JetStream: streams, buckets, consumers and the JetStream API never cross.
// Nothing crosses under its own subject either: the broker publishes answers (PubAcks, pulled
// copies, Direct Get replies) in the agent account on whatever reply subject an agent names,
// so a link that carried chat.> would carry those answers too, and the other side would store
// them as another agent's messages. Each side therefore runs a relay (LeafRelayPermissions)
// that sends across, under the link's own subjects (LeafSubjects), only what CheckLeafCopy
// accepts: a publish of one of its agents, chat, DMs and presence writes. The other side's
// relay checks it again and publishes it under its own subject, where that side's service
// imports store it as if one of its agents had published it. Presence records would not cross
// as they are anyway: nats-server denies $JS.API.>, $KV.> and $OBJ.> on every leaf connection
// of an account between servers with JetStream. Relayed presence records live for the bucket's
// TTL, so the other side's agents leave each roster on their own once the link is down.

// LeafSubjects are the subjects that cross a leaf link, both ways, while it is up: relayed chat
// (LeafSubject of a chat subject; CHAT_<s> on each side stores what its relay publishes, and
// each side's fan-out copies it to its own durable members), relayed DMs (each side's DM_<s>
// stores them, so a DM reaches an agent of either side; the side without the recipient
// reclaims its copy as a DM to an id it does not know), and relayed presence records
// (LeafPresenceSubject), which no stream captures.
func (n Names) LeafSubjects() []string {
	p := n.Prefix() + ".leaf."
	return []string{p + string(KindChat) + ".>", p + string(KindInst) + ".>", n.LeafPresenceFilter()}
}

// LeafSubject is the subject a relay sends a chat or DM subject across as:
// cotal.<s>.chat.<rest> becomes cotal.<s>.leaf.chat.<rest>, and cotal.<s>.inst.<rest>
// cotal.<s>.leaf.inst.<rest>.
func (n Names) LeafSubject(subject string) string {
	return n.Prefix() + ".leaf." + strings.TrimPrefix(subject, n.Prefix()+".")
}

// LocalSubject undoes LeafSubject: the chat or DM subject a relayed copy on leaf is
// published under on this side. It fails for a subject that is not a relayed chat or DM.
func (n Names) LocalSubject(leaf string) (string, error) {
	rest, ok := strings.CutPrefix(leaf, n.Prefix()+".leaf.")
	if !ok || !(strings.HasPrefix(rest, string(KindChat)+".") || strings.HasPrefix(rest, string(KindInst)+".")) {
		return "", anomalyf(ReasonMalformedSubject, "%q is not a relayed chat or DM subject of space %s", leaf, n.space)
	}
	return n.Prefix() + "." + rest, nil
}

// LeafPresenceSubject is cotal.<s>.leaf.presence.<id>: instance id's presence record, or its
// deletion, relayed across a leaf link with the headers of the bucket write.
func (n Names) LeafPresenceSubject(id string) string {
	return n.Prefix() + ".leaf.presence." + Sanitize(id)
}

// LeafPresenceFilter is cotal.<s>.leaf.presence.*: every relayed presence record.
func (n Names) LeafPresenceFilter() string { return n.Prefix() + ".leaf.presence.*" }

// LeafRelayPermissions are the permissions of a mesh's relay on a leaf link, a connection in
// the agent account: it reads every chat message, DM and presence write of the side's agents
// and sends each across under LeafSubjects, and publishes what arrives from the other side
// under the subject it stands for.
func LeafRelayPermissions(n Names) Permissions {
	var p Permissions
	local := []string{n.Prefix() + "." + string(KindChat) + ".>", n.Prefix() + "." + string(KindInst) + ".>",
		"$KV." + n.PresenceBucket() + ".*"}
	for _, s := range append(local, n.LeafSubjects()...) {
		p.Pub.Allow.add(s)
		p.Sub.Allow.add(s)
	}
	return p
}

// CheckLeafCopy is the relay's check of a chat message or DM about to cross a leaf link, or
// just arrived across one, on its local subject: the whole receive check (CheckDelivery), a
// chat or unicast kind, and a payload whose routing field names the subject's channel or
// target. A copy the broker sent on a reply subject an agent chose fails one of them unless it
// is a message stored under that very subject; the relay refuses those by their headers.
func CheckLeafCopy(subject string, payload []byte) (Subject, error) {
	sub, m, err := CheckDelivery(subject, payload)
	if err != nil {
		return sub, err
	}
	switch {
	case sub.Kind == KindChat && SanitizeChannel(m.Channel) != sub.Rest:
		return sub, anomalyf(ReasonMalformedSubject, "channel %q of the payload is not the subject's %q", m.Channel, sub.Rest)
	case sub.Kind == KindInst && Sanitize(m.To) != sub.Rest:
		return sub, anomalyf(ReasonMalformedSubject, "to %q of the payload is not the subject's target %q", m.To, sub.Rest)
	case sub.Kind != KindChat && sub.Kind != KindInst:
		return sub, anomalyf(ReasonMalformedSubject, "%s subject %q does not cross a leaf link", sub.Kind, subject)
	}
	return sub, nil
}

// LeafLocalSubjects are the subjects of StorageServiceSubjects, and the control services,
// that must not cross a leaf link, denied in both directions by the leaf mesh itself: chat and
// DMs under their own subjects (the relays carry them), anycast tasks (a task stored on both
// sides would be taken twice), the delivery control service, presence bucket writes (relayed
// as LeafPresenceSubject instead), and the JetStream API, acks and flow control, which address
// one side's streams only.
func (n Names) LeafLocalSubjects() []string {
	return append([]string{n.Prefix() + ".ctl.>"}, n.StorageServiceSubjects()...)
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
