package provisioner

import (
	"fmt"

	"github.com/nats-io/nkeys"
	"go.etcd.io/bbolt"
)

// bucketKeyPool, nested in a space bucket, holds user keys made ahead of any mint (public key
// to seed) whose inboxes the agent account already imports (wire/accounts.go). A mint that
// brings no key of its own takes one, so minting a new identity does not re-sign the agent
// account: each re-sign makes nats-server re-register every import of the account, which
// costs time in proportion to the account's identities and disturbs requests in flight
// (RELIABILITY.md). The pool is refilled when empty, by half the identities the account
// imports (at least minPooledKeys), so n mints re-sign the account O(log n) times.
var bucketKeyPool = []byte("key_pool")

// minPooledKeys is the smallest refill of the key pool.
const minPooledKeys = 16

// firstPooledKeys is how many keys a new space's pool starts with, before its agent account
// is first signed: enough for the few agents a per-test mesh connects to re-sign nothing,
// few enough that creating a space does not pay for keys it may never use (each is an
// ed25519 key generation, a large share of a memory mesh's start).
const firstPooledKeys = 4

// takePooledKey removes one key from the space's pool and returns it, refilling the pool
// first when it is empty. The caller wipes the key pair.
func takePooledKey(b *bbolt.Bucket) (nkeys.KeyPair, error) {
	pool, err := b.CreateBucketIfNotExists(bucketKeyPool)
	if err != nil {
		return nil, err
	}
	pub, seed := pool.Cursor().First()
	if pub == nil {
		if err := refillPool(b, pool); err != nil {
			return nil, err
		}
		pub, seed = pool.Cursor().First()
	}
	kp, err := nkeys.FromSeed(append([]byte(nil), seed...))
	if err != nil {
		return nil, fmt.Errorf("key store holds an undecodable pooled key: the file is damaged; restore it from a backup")
	}
	return kp, pool.Delete(pub)
}

// refillPool adds max(minPooledKeys, half the registry's rows) fresh user keys to pool.
func refillPool(b *bbolt.Bucket, pool *bbolt.Bucket) error {
	return addPooledKeys(pool, max(minPooledKeys, b.Bucket(bucketCredentials).Stats().KeyN/2))
}

// addPooledKeys adds n fresh user keys to pool.
func addPooledKeys(pool *bbolt.Bucket, n int) error {
	for range n {
		kp, err := nkeys.CreateUser()
		if err != nil {
			return fmt.Errorf("create user key: %w", err)
		}
		pub, _ := kp.PublicKey()
		err = putSeed(pool, []byte(pub), kp)
		kp.Wipe()
		if err != nil {
			return err
		}
	}
	return nil
}

// pooledIDs returns the public keys waiting in the space's pool.
func pooledIDs(b *bbolt.Bucket) []string {
	pool := b.Bucket(bucketKeyPool)
	if pool == nil {
		return nil
	}
	var ids []string
	_ = pool.ForEach(func(k, _ []byte) error {
		ids = append(ids, string(k))
		return nil
	})
	return ids
}
