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
)
