package provisioner

import (
	"bytes"
	"fmt"
	"time"

	"github.com/nats-io/jwt/v2"
	"go.etcd.io/bbolt"
)

// forgettable is the one rule for deleting a registry row: its credential can no longer
// connect (revoked or expired) and no revocation in acct still needs the row. EnsureSpace
// applies it at start, pruneRevocations when it drops a revocation, and Forget while a mesh
// runs.
func forgettable(rec Record, acct *jwt.AccountClaims, now time.Time) bool {
	_, held := acct.Revocations[rec.ID]
	return !held && !rec.Active(now)
}

// Forget deletes from space's registry the row of every credential forgettable at now and
// returns the records it deleted, so that the short-lived credentials minted while a mesh runs
// (each `cotal send` mints one) leave the registry when they expire rather than at the next
// start. It reads every row; when none is forgettable it writes nothing.
func (s *Store) Forget(space string, now time.Time) ([]Record, error) {
	var found bool
	err := s.db.View(func(tx *bbolt.Tx) error {
		b, acct, err := registryOf(tx, space)
		if err != nil {
			return err
		}
		found, err = anyForgettable(b.Bucket(bucketCredentials), acct, now)
		return err
	})
	if err != nil || !found {
		return nil, wrapForget(space, err)
	}
	var gone []Record
	err = s.db.Update(func(tx *bbolt.Tx) error {
		b, acct, err := registryOf(tx, space)
		if err != nil {
			return err
		}
		gone, err = forgetRows(b, acct, now)
		return err
	})
	return gone, wrapForget(space, err)
}

func wrapForget(space string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("forget expired credentials of space %q: %w", space, err)
}

// registryOf is space's bucket and its account claims, whose revocations decide what stays.
func registryOf(tx *bbolt.Tx, space string) (*bbolt.Bucket, *jwt.AccountClaims, error) {
	b, err := spaceBucket(tx, space)
	if err != nil {
		return nil, nil, err
	}
	acct, err := accountClaims(b)
	return b, acct, err
}

// Keys of the registry row fields forgettable reads. In JSON a quote inside a string value is
// escaped, so these bytes unescaped can only be the keys themselves.
var (
	expiresKey = []byte(`"expiresAt":"`)
	revokedKey = []byte(`"revoked":true`)
)

// anyForgettable reports whether reg holds a row forgettable at now, stopping at the first.
// It reads only each row's expiry and revoked flag, without decoding the row: a mesh runs it
// on every reconcile pass, over the whole registry.
func anyForgettable(reg *bbolt.Bucket, acct *jwt.AccountClaims, now time.Time) (bool, error) {
	c := reg.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		rec := Record{ID: string(k), Revoked: bytes.Contains(v, revokedKey)}
		if _, after, ok := bytes.Cut(v, expiresKey); ok {
			end := bytes.IndexByte(after, '"')
			exp, err := time.Parse(time.RFC3339Nano, string(after[:max(end, 0)]))
			if err != nil {
				return false, fmt.Errorf("decode the expiry of registry record %s: %w", k, err)
			}
			rec.ExpiresAt = exp
		}
		if forgettable(rec, acct, now) {
			return true, nil
		}
	}
	return false, nil
}

// forgetRows deletes every row of b's registry forgettable at now and returns their records.
func forgetRows(b *bbolt.Bucket, acct *jwt.AccountClaims, now time.Time) ([]Record, error) {
	reg := b.Bucket(bucketCredentials)
	var gone []Record
	err := reg.ForEach(func(k, v []byte) error {
		rec, err := decodeRecord(string(k), v)
		if err == nil && forgettable(rec, acct, now) {
			gone = append(gone, rec)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, rec := range gone {
		if err := reg.Delete([]byte(rec.ID)); err != nil {
			return nil, err
		}
	}
	return gone, nil
}
