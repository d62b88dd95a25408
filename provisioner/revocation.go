package provisioner

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/nats-io/jwt/v2"
	"go.etcd.io/bbolt"
)

// bucketRevocations, nested in a space bucket, maps an id the account revokes to the unix
// second after which no JWT the revocation covers is still valid (8 bytes big-endian). Zero,
// or no entry at all (a store written before the bucket existed), keeps the revocation for
// good: a JWT it covers never expires, or its expiry is not known.
var bucketRevocations = []byte("revocations")

// revocationGrace is how long a revocation outlives the expiry of the last JWT it covers. The
// broker accepts a JWT through the last second of its exp (one-second resolution); the rest
// is margin for a clock stepped back a little, which would otherwise make a pruned, revoked
// JWT valid again.
const revocationGrace = 5 * time.Second

// revoke adds to acct a revocation of every JWT of id issued at or before at, and records
// when it may be dropped: after exp, the expiry of the JWT being revoked (zero: never), and
// after the expiry of every JWT an earlier revocation of id already covered.
func revoke(b *bbolt.Bucket, acct *jwt.AccountClaims, id string, at, exp time.Time) error {
	rb, err := b.CreateBucketIfNotExists(bucketRevocations)
	if err != nil {
		return err
	}
	until := int64(0)
	if !exp.IsZero() {
		until = exp.Unix()
	}
	if _, held := acct.Revocations[id]; held {
		prev := revocationUntil(rb, id)
		if prev == 0 || until == 0 {
			until = 0
		} else {
			until = max(until, prev)
		}
	}
	acct.RevokeAt(id, at)
	return rb.Put([]byte(id), binary.BigEndian.AppendUint64(nil, uint64(until)))
}

// revocationUntil returns the unix second after which id's revocation may be dropped, or
// zero to keep it.
func revocationUntil(rb *bbolt.Bucket, id string) int64 {
	v := rb.Get([]byte(id))
	if len(v) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v))
}

// pruneRevocations drops from acct every revocation whose covered JWTs have all expired
// (plus revocationGrace) at now, and with it the registry row of an id that can no longer
// connect, so neither the account JWT nor the registry grows with every credential ever
// revoked. It returns how many revocations it dropped. Its cost is one small read per
// revocation still held, so it runs whenever a revocation is added.
func pruneRevocations(b *bbolt.Bucket, acct *jwt.AccountClaims, now time.Time) (int, error) {
	rb := b.Bucket(bucketRevocations)
	if rb == nil {
		return 0, nil
	}
	reg := b.Bucket(bucketCredentials)
	dropped := 0
	for id := range acct.Revocations {
		until := revocationUntil(rb, id)
		if id == jwt.All || until == 0 || !now.After(time.Unix(until, 0).Add(revocationGrace)) {
			continue
		}
		delete(acct.Revocations, id)
		dropped++
		if err := rb.Delete([]byte(id)); err != nil {
			return dropped, err
		}
		rec, found, err := getRecord(reg, id)
		if err != nil {
			return dropped, err
		}
		if found && forgettable(rec, acct, now, time.Time{}) {
			if err := reg.Delete([]byte(id)); err != nil {
				return dropped, err
			}
		}
	}
	return dropped, nil
}

// pruneSpace drops the space's expired revocations and dead registry rows, re-signing the
// account JWT when its revocations changed. It runs at start (EnsureSpace), before the mesh
// mints in process, so every in-process-only row it finds is from an earlier run.
func pruneSpace(tx *bbolt.Tx, b *bbolt.Bucket, now time.Time) error {
	acct, err := accountClaims(b)
	if err != nil {
		return err
	}
	dropped, err := pruneRevocations(b, acct, now)
	if err != nil {
		return fmt.Errorf("prune revocations: %w", err)
	}
	if _, err := forgetRows(b, acct, now, now); err != nil {
		return fmt.Errorf("prune registry: %w", err)
	}
	if dropped == 0 {
		return nil
	}
	_, err = storeAccount(tx, b, acct)
	return err
}
