package provisioner

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/cotal-go/cotal/wire"
	"github.com/nats-io/jwt/v2"
	"go.etcd.io/bbolt"
)

// Record is the registry entry of one instance id in a space: its current credential and
// whether it is revoked. Re-minting an id replaces its record and bumps Revision. Seeds are
// never recorded.
type Record struct {
	ID      string  `json:"id"`
	Name    string  `json:"name"`
	Space   string  `json:"space"`
	Profile Profile `json:"profile"`
	// Grants are the effective grants of the current credential.
	Grants    Grants    `json:"grants"`
	IssuedAt  time.Time `json:"issuedAt"`
	ExpiresAt time.Time `json:"expiresAt,omitzero"` // zero: no expiry
	Revoked   bool      `json:"revoked,omitempty"`
	RevokedAt time.Time `json:"revokedAt,omitzero"`
	// InProcessOnly marks a credential the broker accepts only over an in-process
	// connection (MintRequest.InProcessOnly).
	InProcessOnly bool `json:"inProcessOnly,omitempty"`
	// ForgetOnRevoke lets Forget drop the row once it is revoked, without waiting for the
	// revocation to lapse (MintRequest.ForgetOnRevoke).
	ForgetOnRevoke bool `json:"forgetOnRevoke,omitempty"`
	// Revision counts every change of this id's record (mint, re-mint, revoke), starting at 1.
	Revision  uint64    `json:"revision"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// CommandPrefix starts the name of every credential cotal's own commands mint for themselves
// beside a running mesh ("cli-send-alice-x7k2qa"): short-lived identities that the listings
// meant for people (auth list, who, status, the console) leave out unless asked.
const CommandPrefix = "cli-"

// IsCommandName reports whether name is that of a credential a cotal command minted for itself.
func IsCommandName(name string) bool { return strings.HasPrefix(name, CommandPrefix) }

// Active reports whether the record's credential is neither revoked nor expired at now.
func (r Record) Active(now time.Time) bool {
	return !r.Revoked && (r.ExpiresAt.IsZero() || now.Before(r.ExpiresAt))
}

// ACLFor returns the cotal_acl_<s> record of rec (docs/storage.md "ACL records"), to write under
// rec.ID: the agent's allowSubscribe, [">"] for observer and admin (they read all chat), and []
// once revoked. Expiry is not applied: the broker refuses an expired credential, and the record
// is rewritten only at mint, re-mint and revoke.
func ACLFor(rec Record) wire.ACLRecord {
	acl := wire.ACLRecord{AllowSubscribe: []string{}, Revision: rec.Revision, UpdatedAt: rec.UpdatedAt.UnixMilli()}
	switch {
	case rec.Revoked:
	case rec.Profile == ProfileAgent:
		acl.AllowSubscribe = append(acl.AllowSubscribe, rec.Grants.AllowSubscribe...)
	case rec.Profile == ProfileObserver, rec.Profile == ProfileAdmin:
		acl.AllowSubscribe = append(acl.AllowSubscribe, ">")
	}
	return acl
}

// List returns the records of every credential minted in space, ordered by id.
func (s *Store) List(space string) ([]Record, error) {
	var recs []Record
	err := s.db.View(func(tx *bbolt.Tx) error {
		b, err := spaceBucket(tx, space)
		if err != nil {
			return err
		}
		return b.Bucket(bucketCredentials).ForEach(func(k, v []byte) error {
			r, err := decodeRecord(string(k), v)
			recs = append(recs, r)
			return err
		})
	})
	return recs, err
}

// Record returns the registry record of id in space, or ErrUnknownCredential.
func (s *Store) Record(space, id string) (Record, error) {
	var r Record
	err := s.db.View(func(tx *bbolt.Tx) error {
		b, err := spaceBucket(tx, space)
		if err != nil {
			return err
		}
		var found bool
		r, found, err = getRecord(b.Bucket(bucketCredentials), id)
		if err == nil && !found {
			err = fmt.Errorf("%w %s in space %q", ErrUnknownCredential, id, space)
		}
		return err
	})
	return r, err
}

// Revoke revokes every credential of id in space: it marks the record revoked, adds a
// revocation of every JWT of id issued up to now to the account claims, re-signs the account
// JWT with the operator key and returns it. Apply the JWT to the broker (it disconnects the
// revoked user) and write ACLFor of the new record (it reads nothing) to cotal_acl_<s>.
// Revoking a revoked id changes nothing and returns the current account JWT. Every
// revocation adds prunes those whose JWTs have all expired, with their registry rows.
func (s *Store) Revoke(space, id string) (accountJWT string, err error) {
	err = s.db.Update(func(tx *bbolt.Tx) error {
		b, err := spaceBucket(tx, space)
		if err != nil {
			return err
		}
		reg := b.Bucket(bucketCredentials)
		rec, found, err := getRecord(reg, id)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w %s in space %q", ErrUnknownCredential, id, space)
		}
		if rec.Revoked {
			accountJWT = string(b.Get(keyJWT))
			return nil
		}
		acct, err := accountClaims(b)
		if err != nil {
			return err
		}
		now := time.Now()
		// Pruned first, so that the revocation added here and its row survive this call even
		// when the credential has long expired: the caller reads the row next.
		if _, err := pruneRevocations(b, acct, now); err != nil {
			return err
		}
		if err := revokeRecord(b, acct, &rec, now); err != nil {
			return err
		}
		accountJWT, err = storeAccount(tx, b, acct)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("revoke %s in space %q: %w", id, space, err)
	}
	return accountJWT, nil
}

// revokeRecord revokes every JWT of rec's id issued up to now in acct and marks rec revoked
// in the registry.
func revokeRecord(b *bbolt.Bucket, acct *jwt.AccountClaims, rec *Record, now time.Time) error {
	if err := revoke(b, acct, rec.ID, now, rec.ExpiresAt); err != nil {
		return err
	}
	rec.Revoked, rec.RevokedAt, rec.UpdatedAt = true, now, now
	rec.Revision++
	return putRecord(b.Bucket(bucketCredentials), *rec)
}

func getRecord(reg *bbolt.Bucket, id string) (Record, bool, error) {
	v := reg.Get([]byte(id))
	if v == nil {
		return Record{}, false, nil
	}
	r, err := decodeRecord(id, v)
	return r, err == nil, err
}

func decodeRecord(id string, v []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(v, &r); err != nil {
		return Record{}, fmt.Errorf("decode registry record %s: %w", id, err)
	}
	return r, nil
}

func putRecord(reg *bbolt.Bucket, r Record) error {
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return reg.Put([]byte(r.ID), v)
}
