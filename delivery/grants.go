package delivery

import (
	"github.com/cotal-go/cotal/wire"
)

// Grants are NATS permissions: subjects a connection may publish and subscribe to.
type Grants struct {
	Publish   []string
	Subscribe []string
}

// ServiceGrants returns exactly the permissions the Service's connection needs in the space
// n, for a connection whose inbox prefix is inboxPrefix (nats.CustomInboxPrefix); the mesh's
// scoped delivery credential should hold these and nothing more. The integration tests run the
// Service under exactly these grants. None of them reaches an agent's DM, TASK or presence
// key, and none can mint or change a credential.
func ServiceGrants(n wire.Names, inboxPrefix string) Grants {
	p := n.Prefix()
	api := "$JS.API."
	chat, inbox := n.ChatStream(), n.InboxStream()
	pub := []string{
		// Control replies, inside each requester's own .reply. subtree (LAYOUT.md).
		p + ".ctl." + wire.DeliveryService + ".*.reply.>",
		// Backstop entries and the re-authorized handoff (LAYOUT.md "The durable backstop").
		p + ".dinbox.>",
		p + ".dlv.>",
		// Membership registry writes (SPEC §7); the service is its only writer.
		"$KV." + n.MembersBucket() + ".>",
		// The CHAT frontier, the cursor of a join or leave.
		api + "STREAM.INFO." + chat,
		// The service's own durables: create or update, pull, ack.
		api + "CONSUMER.CREATE." + chat + "." + wire.FanoutConsumer + "." + p + ".chat.>",
		api + "CONSUMER.MSG.NEXT." + chat + "." + wire.FanoutConsumer,
		api + "CONSUMER.INFO." + chat + "." + wire.FanoutConsumer, // its ack floor, at a rejoin
		"$JS.ACK." + chat + "." + wire.FanoutConsumer + ".>",
		api + "CONSUMER.CREATE." + inbox + "." + wire.ReaderConsumer + "." + p + ".dinbox.>",
		api + "CONSUMER.MSG.NEXT." + inbox + "." + wire.ReaderConsumer,
		api + "CONSUMER.INFO." + inbox + "." + wire.ReaderConsumer, // the backlog, for backpressure
		"$JS.ACK." + inbox + "." + wire.ReaderConsumer + ".>",
		// Re-reading a membership key after a compare-and-set conflict (no Direct Get).
		api + "STREAM.MSG.GET." + wire.KVStream(n.MembersBucket()),
	}
	// One long-lived watch per bucket: bind, then an ordered consumer with flow control,
	// deleted when the watch stops.
	for _, bucket := range []string{n.MembersBucket(), n.ChannelsBucket(), n.PresenceBucket()} {
		stream := wire.KVStream(bucket)
		pub = append(pub,
			api+"STREAM.INFO."+stream,
			api+"CONSUMER.CREATE."+stream+".>",
			api+"CONSUMER.DELETE."+stream+".>",
			"$JS.FC."+stream+".>",
		)
	}
	return Grants{
		Publish:   pub,
		Subscribe: []string{controlSubject(n), inboxPrefix + ".>"},
	}
}
