package provisioner

import (
	"time"

	"go.etcd.io/bbolt"
)

// keyLeafLinks holds the version of leaf link a space's leaf credentials were minted for,
// one byte (leafLinkVersion); see retireLeafCredentials. keyLeafRelayed marked version 1.
var keyLeafLinks, keyLeafRelayed = []byte("leaf_links"), []byte("leaf_relayed")

// leafLinkVersion is the current leaf link: a leaf sends up under its own credential's id
// and hears only what the hub sends down (wire.LeafPermissions).
const leafLinkVersion = 2

// retireLeafCredentials revokes, once per space, every active leaf credential minted for an
// older leaf link (docs/leaf.md): one that carried chat and DMs under their own subjects,
// which let a leaf have this mesh store the broker's answers to its agents as another agent's
// messages, or one that let a leaf speak to the other leaves directly, for any agent. The
// revoked rows are returned for the mesh to say what to mint again.
func retireLeafCredentials(tx *bbolt.Tx, b *bbolt.Bucket) ([]Record, error) {
	if v := b.Get(keyLeafLinks); len(v) == 1 && v[0] >= leafLinkVersion {
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
	if err := b.Delete(keyLeafRelayed); err != nil {
		return nil, err
	}
	return old, b.Put(keyLeafLinks, []byte{leafLinkVersion})
}
