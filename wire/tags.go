package wire

// Tag prefixes a minted user JWT carries in nats.tags (SPEC §2): the profile it was minted
// with and, for an agent with a service role, that role (SPEC §8: it names svc_<role>). The
// mint writes them and every client reads them through these constants only. The role keeps
// its case: the mint assigns the tag list instead of lowercasing it.
const (
	ProfileTagPrefix = "cotal-profile:"
	RoleTagPrefix    = "cotal-role:"
)
