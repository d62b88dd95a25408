package provisioner

import (
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

// TestLeafCredentialsOfAnOlderLinkAreRevokedOnce: a space written for an older leaf link
// (none marked, or the first relayed one) revokes its active leaf credentials at its next
// open, names them, and leaves agents and leaf credentials minted afterwards alone.
func TestLeafCredentialsOfAnOlderLinkAreRevokedOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		older func(*bbolt.Bucket) error
	}{
		{"no mark: chat and DMs crossed under their own subjects", func(b *bbolt.Bucket) error { return b.Delete(keyLeafLinks) }},
		{"the first relayed link: leaves spoke to each other directly", func(b *bbolt.Bucket) error {
			if err := b.Delete(keyLeafLinks); err != nil {
				return err
			}
			return b.Put(keyLeafRelayed, []byte{1})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { retiresOnce(t, tc.older) })
	}
}

func retiresOnce(t *testing.T, older func(*bbolt.Bucket) error) {
	s := openStore(t)
	if a, err := s.EnsureSpace("alpha"); err != nil || len(a.RetiredLeaves) > 0 {
		t.Fatalf("a new space retired %v: %v", a.RetiredLeaves, err)
	}
	leaf := mint(t, s, MintRequest{Space: "alpha", Name: "laptop", Profile: ProfileLeaf, NoExpiry: true})
	agent := mint(t, s, MintRequest{Space: "alpha", Name: "alice", Profile: ProfileAgent})
	err := s.db.Update(func(tx *bbolt.Tx) error {
		b, err := spaceBucket(tx, "alpha")
		if err != nil {
			return err
		}
		return older(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.EnsureSpace("alpha")
	if err != nil {
		t.Fatal(err)
	}
	if len(a.RetiredLeaves) != 1 || a.RetiredLeaves[0].ID != leaf.ID {
		t.Fatalf("RetiredLeaves = %+v, want the laptop's leaf credential", a.RetiredLeaves)
	}
	if rec, err := s.Record("alpha", leaf.ID); err != nil || rec.Active(time.Now()) {
		t.Errorf("the old leaf credential: %+v, %v; want it revoked", rec, err)
	}
	if _, ok := decodeAccount(t, a.JWT).Revocations[leaf.ID]; !ok {
		t.Error("the agent account does not revoke the old leaf credential's JWT")
	}
	if rec, err := s.Record("alpha", agent.ID); err != nil || !rec.Active(time.Now()) {
		t.Errorf("alice: %+v, %v; want her still active", rec, err)
	}
	fresh := mint(t, s, MintRequest{Space: "alpha", Name: "laptop-2", Profile: ProfileLeaf, NoExpiry: true})
	if a, err := s.EnsureSpace("alpha"); err != nil || len(a.RetiredLeaves) > 0 {
		t.Fatalf("the next open retired %v: %v", a.RetiredLeaves, err)
	}
	if rec, err := s.Record("alpha", fresh.ID); err != nil || !rec.Active(time.Now()) {
		t.Errorf("a leaf credential minted after the upgrade: %+v, %v; want it active", rec, err)
	}
}
