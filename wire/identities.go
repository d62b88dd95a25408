package wire

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// A display name is the holder's own choice: card.name in presence and from.name in every
// message are free text, so an agent may call itself bob. The name a credential was minted
// with is not: the provisioner writes it to cotal_identities_<s> (IdentitiesBucket) at every
// mint, re-mint and revoke, and rewrites the bucket from its registry at start. Agents read
// it by get only (STREAM.MSG.GET), so a name resolves to the credential minted with it, online
// or not, and a sender whose claimed name is not its minted name can be shown as such
// (docs/hostile-agents.md "Names are a holder's choice").

// IdentitiesBucket is cotal_identities_<s>: IdentityRecord under each instance id, NameRecord
// under NameKey of each name an active agent was minted with.
func (n Names) IdentitiesBucket() string { return "cotal_identities_" + n.space }

// IdentityRecord is what cotal_identities_<s> holds under an instance id: the name and
// profile its credential was minted with, and whether that credential is active (neither
// revoked nor, when written, expired).
type IdentityRecord struct {
	Name    string `json:"name"`
	Profile string `json:"profile"`
	Active  bool   `json:"active"`
}

// NameRecord is what cotal_identities_<s> holds under NameKey(name): the ids of the active
// agents minted with that name, compared case-insensitively as display names are. Mint
// refuses a name an active credential holds, so there is one id unless two differ in case
// only.
type NameRecord struct {
	IDs []string `json:"ids"`
}

// NameKey is the key of name's NameRecord: "name." and the base64url of its lower case, since
// a minted name is free text and a key is not.
func NameKey(name string) string {
	return "name." + base64.RawURLEncoding.EncodeToString([]byte(strings.ToLower(name)))
}

// DecodeIdentityRecord decodes an IdentityRecord strictly: name (non-empty), profile and
// active must all be present. A JetStream answer an agent aimed at a key is refused.
func DecodeIdentityRecord(data []byte) (*IdentityRecord, error) {
	var w struct {
		Name    *string `json:"name"`
		Profile *string `json:"profile"`
		Active  *bool   `json:"active"`
	}
	if err := decodeRegistry(data, &w, ErrInvalidRecord); err != nil {
		return nil, err
	}
	if w.Name == nil || *w.Name == "" || w.Profile == nil || w.Active == nil {
		return nil, fmt.Errorf("%w: an identity record needs name, profile and active", ErrInvalidRecord)
	}
	return &IdentityRecord{Name: *w.Name, Profile: *w.Profile, Active: *w.Active}, nil
}

// DecodeNameRecord decodes a NameRecord strictly: ids must be a present array of routing
// tokens (IsToken).
func DecodeNameRecord(data []byte) (*NameRecord, error) {
	var w struct {
		IDs *[]string `json:"ids"`
	}
	if err := decodeRegistry(data, &w, ErrInvalidRecord); err != nil {
		return nil, err
	}
	if w.IDs == nil {
		return nil, fmt.Errorf("%w: a name record needs ids (an array)", ErrInvalidRecord)
	}
	for _, id := range *w.IDs {
		if !IsToken(id) {
			return nil, fmt.Errorf("%w: ids: %q is not an instance id", ErrInvalidRecord, id)
		}
	}
	return &NameRecord{IDs: *w.IDs}, nil
}

// MarshalJSON encodes IDs as an array even when empty, because a null would not decode.
func (r NameRecord) MarshalJSON() ([]byte, error) {
	type plain NameRecord
	if r.IDs == nil {
		r.IDs = []string{}
	}
	return json.Marshal(plain(r))
}
