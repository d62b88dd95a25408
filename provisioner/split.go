package provisioner

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/jwt/v2"
	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// splitSpace upgrades a space created before it had a storage account (one account for
// streams and credentials alike). That account holds the space's streams, so it becomes the
// storage account, keys and all; a new agent account takes over the original keys. Every
// credential minted before is a user of the storage account now, where it would again reach
// storage without the imports' confinement, so the storage account revokes all of them at
// once (jwt.All at this second) and their registry rows go: none of them can connect again.
// The ones a person holds (not in-process) are returned so that the mesh can say which to
// mint again. cotal's own connections are minted after this second, so the revocation never
// covers them.
func (s *Store) splitSpace(tx *bbolt.Tx, b *bbolt.Bucket, space string) ([]Record, error) {
	old, err := claimsOf(b, agentKeys)
	if err != nil {
		return nil, err
	}
	for _, move := range [][2][]byte{{keyAccountSeed, keyStorageSeed}, {keySigningSeed, keyStorageSigningSeed}} {
		if err := b.Put(move[1], append([]byte(nil), b.Get(move[0])...)); err != nil {
			return nil, err
		}
	}
	old.Name = space + " storage"
	old.Revocations = nil
	old.RevokeAt(jwt.All, time.Now())
	old.Limits.Conn = jwt.NoLimit
	s.applyStorageLimits(old)
	old.Exports = storageExports()
	if _, err := storeClaims(tx, b, storageKeys, old); err != nil {
		return nil, err
	}
	retired, err := retireRegistry(b)
	if err != nil {
		return nil, err
	}
	return retired, s.newAgentAccount(tx, b, space)
}

// retireRegistry returns the registry rows of a space being split that are active and not
// in-process, and drops the revocation records, which described the old account's JWT.
func retireRegistry(b *bbolt.Bucket) ([]Record, error) {
	now := time.Now()
	var retired []Record
	err := b.Bucket(bucketCredentials).ForEach(func(k, v []byte) error {
		rec, err := decodeRecord(string(k), v)
		if err != nil {
			return err
		}
		if rec.Active(now) && !rec.InProcessOnly {
			retired = append(retired, rec)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := b.DeleteBucket(bucketRevocations); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
		return nil, fmt.Errorf("clear %s: %w", bucketRevocations, err)
	}
	return retired, nil
}
