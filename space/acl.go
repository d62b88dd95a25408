package space

import (
	"sync"

	"github.com/cotal-go/cotal/wire"
)

// aclTable is the authoritative current read ACL of every instance of one space, kept from
// the provisioner's registry (SPEC §9 item 6). It implements delivery.ACLSource.
type aclTable struct {
	mu   sync.RWMutex
	byID map[string]wire.ACLRecord
}

func newACLTable() *aclTable { return &aclTable{byID: map[string]wire.ACLRecord{}} }

func (t *aclTable) set(id string, rec wire.ACLRecord) {
	t.mu.Lock()
	t.byID[id] = rec
	t.mu.Unlock()
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
