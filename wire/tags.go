package wire

// Tag prefixes a minted user JWT carries in nats.tags (SPEC §2): the profile it was minted
// with; for an agent with a service role, that role (SPEC §8: it names svc_<role>); and for an
// agent, one subscribe tag per channel of its active read set (the channels it joins at boot,
// --subscribe), in order. The JWT's subscribe grants are the read ACL, which allowSubscribe
// may widen past the active set, so without the subscribe tags a client holding only its
// .creds could not tell the two apart. The mint writes the tags and every client reads them
// through these constants only. Roles and channels keep their case: the mint assigns the tag
// list instead of lowercasing it.
const (
	ProfileTagPrefix   = "cotal-profile:"
	RoleTagPrefix      = "cotal-role:"
	SubscribeTagPrefix = "cotal-subscribe:"
	// CapabilityTagPrefix names a capability the agent holds toward the manager service
	// (docs/agents.md "The manager service"), one tag each: cotal-capability:spawn.
	CapabilityTagPrefix = "cotal-capability:"
)

// CapabilitySpawn lets an agent ask the manager service to spawn a teammate from an agent
// file and to read agent files' personas and grants.
const CapabilitySpawn = "spawn"

// KnownCapability reports whether c is a capability cotal grants.
func KnownCapability(c string) bool { return c == CapabilitySpawn }

// The user-facing profiles of SPEC Appendix B, as the cotal-profile tag names them. The
// provisioner mints them and a client reads them back from the tag, so both take the names
// from here.
const (
	// ProfileAgent posts to its allowPublish channels and reads within allowSubscribe.
	ProfileAgent = "agent"
	// ProfileObserver reads all chat, CHAT history, presence and the channel registry.
	ProfileObserver = "observer"
	// ProfileAdmin is observer plus the whole space's live view (Endpoint.Follow) and DM history.
	ProfileAdmin = "admin"
	// ProfileLeaf is the link of a leaf mesh to a hub (docs/accounts.md "Leaf links"):
	// LeafPermissions, and only as a leaf node connection.
	ProfileLeaf = "leaf"
)
