package delivery

import (
	"bytes"
	"strings"
	"time"
)

// resolveMention returns the instance a lowercased @mention names (SPEC §4) at publish time
// at. A name held by exactly one live instance (status not offline, heartbeat within the
// liveness window, SPEC §6) resolves to it; several live holders make the name ambiguous and
// resolve to nothing. With no live holder, the one instance last seen under that name still
// resolves: SPEC §4 promises the copy to an authorized target that is offline, and the
// fan-out checks authorization against the resolved id's current ACL. Two or more last-seen
// holders, or none, resolve to nothing. "Last seen" is the fan-out's memory of presence rows
// since the mesh started; a bucket delete or purge forgets a row.
//
// With names, a presence row holds the name only when its id's credential was minted with
// it, and a name no row holds resolves to the one credential minted with it, if one is.
func resolveMention(presence *kvCache[presenceRow], names NameSource, name string, at time.Time) (string, bool) {
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" {
		return "", false
	}
	var live, seen []string
	presence.each(func(id string, r presenceRow) {
		if r.name != name || !mintedAs(names, id, name) {
			return
		}
		seen = append(seen, id)
		if r.live(at) {
			live = append(live, id)
		}
	})
	switch {
	case len(live) == 1:
		return live[0], true
	case len(live) == 0 && len(seen) == 1:
		return seen[0], true
	case len(seen) == 0 && names != nil:
		if ids := names.MintedAs(name); len(ids) == 1 {
			return ids[0], true
		}
	}
	return "", false
}

// mintedAs reports whether id's credential was minted with the lowercased name; true for
// every id without names.
func mintedAs(names NameSource, id, name string) bool {
	if names == nil {
		return true
	}
	minted, ok := names.MintedName(id)
	return ok && strings.ToLower(minted) == name
}

// mayMention reports whether a CHAT payload can carry @mentions: false only when its bytes
// hold neither the key "mentions" nor a backslash, the only way to spell that key otherwise.
// The fan-out decodes a live channel's message only when it may mention someone.
func mayMention(data []byte) bool {
	return bytes.IndexByte(data, '\\') >= 0 || bytes.Contains(data, []byte(`"mentions"`))
}
