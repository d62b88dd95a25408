package provisioner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"go.etcd.io/bbolt"
)

// holdersOf returns the registry records of the active credentials named name other than
// id's. In-process-only credentials are left out: the mesh mints one per embedded Endpoint,
// and outside that process they are worthless, so they leave no second credential anyone
// could use.
func holdersOf(reg *bbolt.Bucket, name, id string, now time.Time) ([]Record, error) {
	quoted, err := json.Marshal(name)
	if err != nil {
		return nil, err
	}
	// Only rows whose JSON carries the name are decoded: a mint scans the whole registry.
	needle := append([]byte(`"name":`), quoted...)
	var out []Record
	err = reg.ForEach(func(k, v []byte) error {
		if string(k) == id || !bytes.Contains(v, needle) {
			return nil
		}
		rec, err := decodeRecord(string(k), v)
		if err == nil && rec.Name == name && rec.Active(now) && !rec.InProcessOnly {
			out = append(out, rec)
		}
		return err
	})
	return out, err
}

// nameInUse is the error for a mint of name while holder, another active credential, has it.
func nameInUse(name string, holder Record) error {
	exp := "never expires"
	if !holder.ExpiresAt.IsZero() {
		exp = "expires " + holder.ExpiresAt.UTC().Format(time.RFC3339)
	}
	return fmt.Errorf("%w: %q is held by the active %s credential %s (%s); to re-mint it, pass "+
		"its identity (Identity); to replace it, set Replace, which revokes it; or revoke it first",
		ErrNameInUse, name, holder.Profile, holder.ID, exp)
}
