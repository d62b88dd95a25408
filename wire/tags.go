package wire

// Tag prefixes a minted user JWT carries in nats.tags (SPEC §2): the profile it was minted
// with and, for an agent with a service role, that role (SPEC §8: it names svc_<role>). The
// mint writes them and every client reads them through these constants only. The role keeps
// its case: the mint assigns the tag list instead of lowercasing it.
const (
	ProfileTagPrefix = "cotal-profile:"
	RoleTagPrefix    = "cotal-role:"
)

// The user-facing profiles of SPEC Appendix B, as the cotal-profile tag names them. The
// provisioner mints them and a client reads them back from the tag, so both take the names
// from here.
const (
	// ProfileAgent posts to its allowPublish channels and reads within allowSubscribe.
	ProfileAgent = "agent"
	// ProfileObserver reads all chat, CHAT history, presence and the channel registry.
	ProfileObserver = "observer"
	// ProfileAdmin is observer plus the whole space's live tap and DM history.
	ProfileAdmin = "admin"
)
