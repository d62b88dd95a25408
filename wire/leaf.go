package wire

import "strings"

// A leaf link (docs/leaf.md, docs/accounts.md "Leaf links") binds a space's agent account on
// one mesh (the leaf, a laptop) to the same space's agent account on another (the hub). Each
// mesh keeps its own JetStream: streams, buckets, consumers and the JetStream API never cross.
// Nothing crosses under its own subject either: the broker publishes answers (PubAcks, pulled
// copies, Direct Get replies) in the agent account on whatever reply subject an agent names,
// so a link that carried chat.> would carry those answers too, and the other side would store
// them as another agent's messages. Each side therefore runs a relay (LeafRelayPermissions)
// that sends across, under the link's own subjects (LeafSubject), only what CheckLeafCopy
// accepts: a publish of one of its agents, chat, DMs and presence writes. The other side's
// relay checks it again and publishes it under its own subject, where that side's service
// imports store it as if one of its agents had published it. Presence records would not cross
// as they are anyway: nats-server denies $JS.API.>, $KV.> and $OBJ.> on every leaf connection
// of an account between servers with JetStream. Relayed presence records live for the bucket's
// TTL, so the other side's agents leave each roster on their own once the link is down.

// A relayed copy travels on cotal.<s>.leaf.<dir>.<leaf>.<kind>.<rest>, where leaf is the id of
// a leaf credential: up is a leaf mesh's relay sending to the hub under its own credential's
// id, down the hub's relay sending to one leaf, under that leaf's id. A leaf credential may
// publish and receive its own two subjects only (LeafPermissions), so a leaf reaches another
// leaf only through the hub's relay, which checks that it speaks for agents no one else does.
// Kind is chat or inst with the rest of the chat or DM subject, or presence with an instance
// id.
const (
	// LeafUp is the direction of a copy a leaf mesh sends to its hub.
	LeafUp = "up"
	// LeafDown is the direction of a copy the hub sends to one of its leaves.
	LeafDown = "down"
)

// LeafRoute is where a relayed copy travels: its direction, LeafUp or LeafDown, and the id of
// the leaf credential it comes from (up) or goes to (down).
type LeafRoute struct {
	Dir  string
	Leaf string
}

// LeafUpFilterAll is cotal.<s>.leaf.up.*.>: what every leaf sends to the hub.
func (n Names) LeafUpFilterAll() string { return n.Prefix() + ".leaf.up.*.>" }

// LeafFilter is cotal.<s>.leaf.<dir>.<leaf>.>: every copy on dir of the leaf credential leaf.
func (n Names) LeafFilter(dir, leaf string) string {
	return n.Prefix() + ".leaf." + dir + "." + Sanitize(leaf) + ".>"
}

// LeafSubject is the subject a relay sends the local subject across as on route r: a chat
// subject cotal.<s>.chat.<rest> as cotal.<s>.leaf.<dir>.<origin>.chat.<rest>, a DM subject
// likewise, and a presence write $KV.cotal_presence_<s>.<id> as ...presence.<id>.
func (n Names) LeafSubject(r LeafRoute, local string) string {
	rest, ok := strings.CutPrefix(local, "$KV."+n.PresenceBucket()+".")
	if ok {
		rest = "presence." + rest
	} else {
		rest = strings.TrimPrefix(local, n.Prefix()+".")
	}
	return n.Prefix() + ".leaf." + r.Dir + "." + Sanitize(r.Leaf) + "." + rest
}

// LocalSubject undoes LeafSubject: the route a relayed copy on leaf took and the local
// subject it stands for. It fails for a subject that is no relayed chat message, DM or
// presence write of space n.
func (n Names) LocalSubject(leaf string) (LeafRoute, string, error) {
	fail := func() (LeafRoute, string, error) {
		return LeafRoute{}, "", anomalyf(ReasonMalformedSubject, "%q is no relayed chat, DM or presence subject of space %s", leaf, n.space)
	}
	rest, ok := strings.CutPrefix(leaf, n.Prefix()+".leaf.")
	if !ok {
		return fail()
	}
	tok := strings.SplitN(rest, ".", 4)
	if len(tok) != 4 || (tok[0] != LeafUp && tok[0] != LeafDown) || tok[1] == "" || tok[3] == "" || Sanitize(tok[1]) != tok[1] {
		return fail()
	}
	r := LeafRoute{Dir: tok[0], Leaf: tok[1]}
	switch tok[2] {
	case string(KindChat), string(KindInst):
		return r, n.Prefix() + "." + tok[2] + "." + tok[3], nil
	case "presence":
		if strings.Contains(tok[3], ".") || Sanitize(tok[3]) != tok[3] {
			return fail()
		}
		return r, "$KV." + n.PresenceBucket() + "." + tok[3], nil
	}
	return fail()
}

// LeafRelayPermissions are the permissions of a mesh's relay on a leaf link, a connection in
// the agent account: it reads every chat message, DM and presence write of the side's agents
// and sends each across, and publishes what arrives from the other side under the subject it
// stands for.
func LeafRelayPermissions(n Names) Permissions {
	var p Permissions
	for _, s := range []string{n.Prefix() + "." + string(KindChat) + ".>", n.Prefix() + "." + string(KindInst) + ".>",
		"$KV." + n.PresenceBucket() + ".*", n.Prefix() + ".leaf.>"} {
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
// under LeafSubject instead), and the JetStream API, acks and flow control, which address
// one side's streams only.
func (n Names) LeafLocalSubjects() []string {
	return append([]string{n.Prefix() + ".ctl.>"}, n.StorageServiceSubjects()...)
}

// LeafPermissions are the permissions of leaf credential id: the user a leaf mesh's link
// connects as may send up and receive down under its own id, and nothing else. The hub
// enforces that on the link and tells the leaf. Both directions allow both subjects: the hub
// applies a leaf user's publish and subscribe permissions the other way round from the leaf,
// so only a list that is the same both ways means the same on either side.
func LeafPermissions(n Names, id string) Permissions {
	var p Permissions
	for _, s := range []string{n.LeafFilter(LeafUp, id), n.LeafFilter(LeafDown, id)} {
		p.Pub.Allow.add(s)
		p.Sub.Allow.add(s)
	}
	return p
}
