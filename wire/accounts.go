package wire

// A space lives in two NATS accounts (docs/accounts.md "Two accounts per space"). Its storage
// account holds every stream and bucket, the JetStream API and cotal's own connections; its
// agent account holds every credential handed out (agent, observer, admin) and has no JetStream
// of its own. The agent account reaches storage only through the service imports below, all
// bound to one service export of ">" in the storage account.
//
// Why: JetStream answers a publish with a PubAck on the publisher's reply subject, and no
// publish permission restricts a reply subject. In one account an agent could aim that PubAck
// at any subject a stream captures (a channel's history, a member's DLV, a registry row) and
// evict what was stored there. Across the import, a response reaches the agent account only,
// and nats-server does not send a response back through an import of the export it came
// from (its service-import cycle check compares exports), so with a single export no PubAck
// or pull delivery can be re-published into storage.

// StorageServiceSubjects are the subjects the agent account imports as services from the
// space's storage account: what an agent, observer or admin publishes that storage consumes.
// Live chat is also delivered inside the agent account itself, to its subscribers.
func (n Names) StorageServiceSubjects() []string {
	p := n.Prefix()
	return []string{
		p + ".chat.>", // CHAT_<s>
		p + ".inst.>", // DM_<s>
		p + ".svc.>",  // TASK_<s>
		"$KV." + n.PresenceBucket() + ".>",
		"$JS.API.>",
		"$JS.ACK.>",
		"$JS.FC.>",
	}
}

// Control requests do not cross: a request that crosses an import reaches its server with a
// reply subject the broker made up, the requester's own hidden behind it, and the answer
// goes back to whatever subject the requester named, another agent's inbox or a channel.
// The delivery control service therefore listens in the agent account itself
// (DeliveryControlPermissions), where it sees the reply subject and answers only inside the
// request's own subtree (CheckControlReplySubject).

// SharedServiceSubject is the one service import of StorageServiceSubjects that shares the
// requester's identity (jwt Import.Share): the JetStream API, so that the broker's API audit
// names the user behind each consumer create and the mesh can bound consumers per identity
// (docs/hostile-agents.md "Bounded shares"). No other import shares: a shared import writes the
// requester's details (user key, credential, host) into the Nats-Request-Info header of every
// message crossing it, and chat, DM and task messages are stored with their headers.
const SharedServiceSubject = "$JS.API.>"

// StorageStreamSubject is what the agent account imports as a stream for identity id: its
// inbox, where push consumers created in storage (KV watches) deliver.
func StorageStreamSubject(id string) string { return InboxPrefix(id) + ".>" }

// ResponseSubjects are the subjects on which the broker answers, in the storage account, a
// request that crossed a service import: a pull request's copies among them (`_R_.<server
// prefix>.<token>`, nats-server's service reply prefix).
const ResponseSubjects = "_R_.>"
