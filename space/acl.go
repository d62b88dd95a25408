package space

import (
	"strings"
	"sync"

	"github.com/cotal-go/cotal/wire"
)

// aclTable is the authoritative current read ACL of every instance of one space, kept from
// the provisioner's registry (SPEC §9 item 6). It implements delivery.ACLSource.
type aclTable struct {
	mu   sync.RWMutex
	byID map[string]wire.ACLRecord
	// names are the minted names of the active agent credentials, by id (delivery.NameSource).
	names map[string]string
}

func newACLTable() *aclTable {
	return &aclTable{byID: map[string]wire.ACLRecord{}, names: map[string]string{}}
}

// set records id's read ACL and, for an active agent credential, the name it was minted
// with; name is empty for any other.
func (t *aclTable) set(id string, rec wire.ACLRecord, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byID[id] = rec
	if name == "" {
		delete(t.names, id)
	} else {
		t.names[id] = name
	}
}

// MintedName returns the name id's active agent credential was minted with.
func (t *aclTable) MintedName(id string) (string, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	name, ok := t.names[id]
	return name, ok
}

// MintedAs returns the ids of the active agent credentials minted with name, compared
// case-insensitively.
func (t *aclTable) MintedAs(name string) []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var ids []string
	for id, n := range t.names {
		if strings.EqualFold(n, name) {
			ids = append(ids, id)
		}
	}
	return ids
}

// ReadACL returns id's current read ACL; false means the mesh never minted id.
func (t *aclTable) ReadACL(id string) (wire.ACLRecord, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	rec, ok := t.byID[id]
	return rec, ok
}

// openACL is the ACL source of an open (unauthenticated) mesh: without credentials there is
// no read ACL, so every instance may read every channel (SPEC §9 claims do not hold there).
type openACL struct{}

func (openACL) ReadACL(string) (wire.ACLRecord, bool) {
	return wire.ACLRecord{AllowSubscribe: []string{">"}}, true
}
