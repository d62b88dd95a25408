package endpoint

import "slices"

// Credential is what the credential this Endpoint connected with says of its holder (SPEC §2,
// §9): its id, name, role, space and the channel grants the broker enforces. It is decoded at
// Connect, as ParseCredential decodes a file; false in open mode, where there is none. The
// slices are copies the caller may keep.
func (e *Endpoint) Credential() (Credential, bool) {
	if !e.minted {
		return Credential{}, false
	}
	c := e.cred
	c.ReadACL, c.Subscribe, c.PublishACL = slices.Clone(c.ReadACL), slices.Clone(c.Subscribe), slices.Clone(c.PublishACL)
	return c, true
}
