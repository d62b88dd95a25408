package provisioner

import (
	"bytes"
	"fmt"
	"time"

	"github.com/nats-io/jwt/v2"
	"go.etcd.io/bbolt"
)

// forgettable is the one rule for deleting a registry row: no revocation in acct still needs
// it, and its credential can no longer connect: it is revoked, or it expired more than
// revocationGrace before now (the broker accepts a JWT through the last second of its exp, and
// a revoke right after expiry still finds the row), or it is an in-process-only credential
// last written before since, the time its store was opened: the mesh mints those for its own
// Endpoints and keeps their seeds in memory only, so one from an earlier run is held by
// nobody. A revoked row minted with ForgetOnRevoke goes at once: its revocation stays in acct
// without it, and pruneRevocations drops the revocation by the time recorded apart from the
// row. EnsureSpace applies the rule at start (since is then, before the mesh mints anything),
// pruneRevocations when it drops a revocation (without the in-process part), and Forget while
// a mesh runs.
func forgettable(rec Record, acct *jwt.AccountClaims, now, since time.Time) bool {
	if rec.Revoked && rec.ForgetOnRevoke {
		return true
	}
	_, held := acct.Revocations[rec.ID]
	return !held && dead(rec, now, since)
}

// dead is forgettable without the revocations: the part that needs no account claims.
func dead(rec Record, now, since time.Time) bool {
	expired := !rec.ExpiresAt.IsZero() && now.After(rec.ExpiresAt.Add(revocationGrace))
	return rec.Revoked || expired || rec.InProcessOnly && rec.UpdatedAt.Before(since)
}

// Forget deletes from space's registry the row of every credential forgettable at now and
// returns the records it deleted, so that the short-lived credentials minted while a mesh runs
// (each `cotal send` mints one) leave the registry when they expire rather than at the next
// start, and the in-process credentials of an earlier run of the mesh leave it too. It reads
// every row; when none is forgettable it writes nothing.
func (s *Store) Forget(space string, now time.Time) ([]Record, error) {
	var found bool
	err := s.db.View(func(tx *bbolt.Tx) error {
		b, err := spaceBucket(tx, space)
		if err != nil {
			return err
		}
		found, err = anyForgettable(b, now, s.opened)
		return err
	})
	if err != nil || !found {
		return nil, wrapForget(space, err)
	}
	var gone []Record
	err = s.db.Update(func(tx *bbolt.Tx) error {
		b, err := spaceBucket(tx, space)
		if err != nil {
			return err
		}
		acct, err := accountClaims(b)
		if err != nil {
			return err
		}
		gone, err = forgetRows(b, acct, now, s.opened)
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

// Keys of the registry row fields forgettable reads. In JSON a quote inside a string value is
// escaped, so these bytes unescaped can only be the keys themselves.
var (
	expiresKey   = []byte(`"expiresAt":"`)
	updatedKey   = []byte(`"updatedAt":"`)
	revokedKey   = []byte(`"revoked":true`)
	inProcessKey = []byte(`"inProcessOnly":true`)
	forgetKey    = []byte(`"forgetOnRevoke":true`)
)

// anyForgettable reports whether b's registry holds a row forgettable at now, stopping at the
// first. It reads only the fields dead needs, without decoding the row, and decodes the
// account claims only for a row that is dead: a mesh runs it on every reconcile pass, over
// the whole registry, and the claims grow with the credentials. Revoked rows are passed over:
// one goes with its revocation (pruneRevocations), which holds it until then, so looking at
// it here would decode the claims on every pass for nothing; start catches any other. A
// revoked row minted with ForgetOnRevoke is forgettable as it is.
func anyForgettable(b *bbolt.Bucket, now, since time.Time) (bool, error) {
	var acct *jwt.AccountClaims
	c := b.Bucket(bucketCredentials).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if bytes.Contains(v, revokedKey) {
			if bytes.Contains(v, forgetKey) {
				return true, nil
			}
			continue
		}
		rec := Record{ID: string(k), InProcessOnly: bytes.Contains(v, inProcessKey)}
		var err error
		if rec.ExpiresAt, err = timeField(v, expiresKey); err == nil && rec.InProcessOnly {
			rec.UpdatedAt, err = timeField(v, updatedKey)
		}
		if err != nil {
			return false, fmt.Errorf("decode registry record %s: %w", k, err)
		}
		if !dead(rec, now, since) {
			continue
		}
		if acct == nil {
			if acct, err = accountClaims(b); err != nil {
				return false, err
			}
		}
		if forgettable(rec, acct, now, since) {
			return true, nil
		}
	}
	return false, nil
}

// timeField reads the RFC 3339 time after key in a JSON object; zero when key is absent.
func timeField(v, key []byte) (time.Time, error) {
	_, after, ok := bytes.Cut(v, key)
	if !ok {
		return time.Time{}, nil
	}
	end := bytes.IndexByte(after, '"')
	return time.Parse(time.RFC3339Nano, string(after[:max(end, 0)]))
}

// forgetRows deletes every row of b's registry forgettable at now and returns their records.
func forgetRows(b *bbolt.Bucket, acct *jwt.AccountClaims, now, since time.Time) ([]Record, error) {
	reg := b.Bucket(bucketCredentials)
	var gone []Record
	err := reg.ForEach(func(k, v []byte) error {
		rec, err := decodeRecord(string(k), v)
		if err == nil && forgettable(rec, acct, now, since) {
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
