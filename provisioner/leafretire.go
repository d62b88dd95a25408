package provisioner

import (
	"time"

	"go.etcd.io/bbolt"
)

// keyLeafRelayed marks a space whose leaf credentials may carry the relays' subjects only
// (wire.LeafPermissions); see retireLeafCredentials.
var keyLeafRelayed = []byte("leaf_relayed")

// retireLeafCredentials revokes, once per space, every active leaf credential minted before
// leaf links carried only what the relays send (docs/leaf.md). Such a credential may publish
// chat and DMs under their own subjects into the agent account, so a leaf holding it could
// still have this mesh store the broker's answers to its agents as another agent's
// messages. The revoked rows are returned for the mesh to say what to mint again.
func retireLeafCredentials(tx *bbolt.Tx, b *bbolt.Bucket) ([]Record, error) {
	if b.Get(keyLeafRelayed) != nil {
		return nil, nil
	}
	now := time.Now()
	var old []Record
	err := b.Bucket(bucketCredentials).ForEach(func(k, v []byte) error {
		rec, err := decodeRecord(string(k), v)
		if err == nil && rec.Profile == ProfileLeaf && rec.Active(now) {
			old = append(old, rec)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(old) > 0 {
		acct, err := accountClaims(b)
		if err != nil {
			return nil, err
		}
		for i := range old {
			if err := revokeRecord(b, acct, &old[i], now); err != nil {
				return nil, err
			}
		}
		if _, err := storeAccount(tx, b, acct); err != nil {
			return nil, err
		}
	}
	return old, b.Put(keyLeafRelayed, []byte{1})
}
