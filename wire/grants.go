package wire

// Permissions are NATS subject permissions as plain data: what one credential may publish and
// subscribe to. Lists keep grant order and hold no duplicates or empty subjects, so a
// credential minted from them is the same byte for byte on every run.
type Permissions struct {
	Pub SubjectRules
	Sub SubjectRules
}

// SubjectRules allow and deny subjects; a deny wins over an allow.
type SubjectRules struct {
	Allow SubjectList
	Deny  SubjectList
}

// SubjectList is an ordered list of subjects without duplicates.
type SubjectList []string

// add appends each subject not yet in l, skipping empty ones, as the JWT library's own
// StringList.Add does.
func (l *SubjectList) add(subjects ...string) {
	for _, s := range subjects {
		if s != "" && !contains(*l, s) {
			*l = append(*l, s)
		}
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// AgentScope is what an agent's permissions are cut to (SPEC §9): its read ACL, its post ACL
// and its anycast role. The caller validates and defaults it (AllowSubscribe defaults to the
// boot subscribe set).
type AgentScope struct {
	AllowSubscribe []string
	AllowPublish   []string
	Role           string
	// ManagerControl adds the request subject of the manager control service and its reply
	// subtree (ManagerService).
	ManagerControl bool
}

// AgentPermissions are the agent profile's permissions for instance id: SPEC Appendix B plus
// docs/accounts.md "Profiles and grants".
func AgentPermissions(n Names, id string, s AgentScope) Permissions {
	p := common(id)
	agentPermissions(&p, n, id, s)
	return p
}

// ObserverPermissions are the observer profile's permissions: SPEC Appendix B's read of all
// chat, CHAT history, presence and the channel registry, with cotal's own consumers out of
// reach.
func ObserverPermissions(n Names, id string) Permissions {
	p := common(id)
	observerPermissions(&p, n, id)
	return p
}

// AdminPermissions are the admin profile's permissions: the observer's plus the whole space's
// live view (Endpoint.Follow) and DM history (SPEC Appendix B).
func AdminPermissions(n Names, id string) Permissions {
	p := common(id)
	adminPermissions(&p, n, id)
	return p
}

// ProvisionerPermissions are the permissions of cotal's provisioner connection: the space's
// streams, buckets, bind-only durables, channel registry and ACL records, and no message
// content.
func ProvisionerPermissions(n Names, id string) Permissions {
	p := common(id)
	provisionerPermissions(&p, n)
	return p
}

// DeliveryPermissions are exactly the permissions the delivery service's connection uses,
// for a connection whose inbox prefix is inboxPrefix (InboxPrefix(id) for a minted
// credential). None of them reaches an agent's DM, TASK or presence key, and none can mint or
// change a credential.
func DeliveryPermissions(n Names, inboxPrefix string) Permissions {
	var p Permissions
	p.Sub.Allow.add(inboxPrefix + ".>")
	deliveryPermissions(&p, n)
	return p
}

// common are the grants every profile but delivery starts with. SPEC §9 item 1: replies,
// pull responses and KV watch deliveries ride the per-identity inbox. $JS.API.INFO is what
// clients call to detect JetStream; the delivery service never does, so its credential does
// without.
func common(id string) Permissions {
	var p Permissions
	p.Sub.Allow.add(InboxPrefix(id) + ".>")
	p.Pub.Allow.add("$JS.API.INFO")
	return p
}

// Subject builders for the JetStream API, KV and ack subjects the profiles grant.

func streamAPI(verb, stream string) string { return "$JS.API.STREAM." + verb + "." + stream }

func consumerAPI(verb, stream, consumer string) string {
	return "$JS.API.CONSUMER." + verb + "." + stream + "." + consumer
}

// pinnedCreate is the extended create subject of c, with its name and its one filter in the
// subject, so the broker refuses any other name or filter (SPEC §9 item 4).
func pinnedCreate(c ConsumerSpec) string {
	return consumerAPI("CREATE", c.Stream, c.Name) + "." + c.Filter
}

// ackSubject covers every ack, nak, term and in-progress reply of one consumer.
func ackSubject(stream, consumer string) string { return "$JS.ACK." + stream + "." + consumer + ".>" }

// kvKeys is the write subject of every key of a bucket.
func kvKeys(bucket string) string { return "$KV." + bucket + ".>" }

// createDenies are the three consumer-create forms that accept a consumer name or filter
// outside the subject (SPEC §9 item 3): bare, extended and legacy durable.
func createDenies(stream string) []string {
	return []string{
		"$JS.API.CONSUMER.CREATE." + stream,
		"$JS.API.CONSUMER.CREATE." + stream + ".>",
		"$JS.API.CONSUMER.DURABLE.CREATE." + stream + ".>",
	}
}

// kvGetGrants let a client bind a bucket (STREAM.INFO) and get a key by subject or by
// revision: Direct Get when the bucket allows it, else STREAM.MSG.GET.
func kvGetGrants(bucket string) []string {
	s := KVStream(bucket)
	return []string{
		streamAPI("INFO", s),
		"$JS.API.DIRECT.GET." + s,
		"$JS.API.DIRECT.GET." + s + ".>",
		streamAPI("MSG.GET", s),
	}
}
