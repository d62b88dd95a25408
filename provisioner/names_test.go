package provisioner

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"
)

func TestMintRefusesANameAnActiveCredentialHolds(t *testing.T) {
	t.Run("a second credential of an active name is refused and registers nothing", func(t *testing.T) {
		s := openStore(t)
		old := mint(t, s, MintRequest{Name: "eve"})
		before := spaceClaims(t, s)
		_, err := s.Mint(MintRequest{Space: "alpha", Name: "eve", Profile: ProfileAgent})
		if !errors.Is(err, ErrNameInUse) {
			t.Fatalf("second mint of eve = %v; want ErrNameInUse", err)
		}
		for _, want := range []string{old.ID, "Identity", "Replace", "revoke it first"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %s", err, want)
			}
		}
		if recs, _ := s.List("alpha"); len(recs) != 1 {
			t.Errorf("registry holds %d credentials after the refusal, want 1", len(recs))
		}
		if after := spaceClaims(t, s); len(after.Revocations) != len(before.Revocations) {
			t.Errorf("the refusal changed the account's revocations: %v", after.Revocations)
		}
	})
	t.Run("a holder of another profile refuses the name too", func(t *testing.T) {
		s := openStore(t)
		mint(t, s, MintRequest{Name: "eve", Profile: ProfileAdmin})
		if _, err := s.Mint(MintRequest{Space: "alpha", Name: "eve", Profile: ProfileAgent}); !errors.Is(err, ErrNameInUse) {
			t.Fatalf("agent eve next to admin eve = %v; want ErrNameInUse", err)
		}
	})
	t.Run("naming the old identity re-mints it", func(t *testing.T) {
		s := openStore(t)
		old := mint(t, s, MintRequest{Name: "eve"})
		kp, err := nkeys.FromSeed(old.Seed)
		if err != nil {
			t.Fatal(err)
		}
		fresh := mint(t, s, MintRequest{Name: "eve", Identity: kp})
		if fresh.ID != old.ID || !spaceClaims(t, s).IsClaimRevoked(decodeUser(t, old.JWT)) {
			t.Errorf("re-mint kept id %v and revoked the old JWT %v", fresh.ID == old.ID, spaceClaims(t, s).IsClaimRevoked(decodeUser(t, old.JWT)))
		}
	})
	t.Run("Replace revokes the old credential in the same step", func(t *testing.T) {
		s := openStore(t)
		old := mint(t, s, MintRequest{Name: "eve"})
		fresh := mint(t, s, MintRequest{Name: "eve", Replace: true})
		if fresh.ID == old.ID || len(fresh.Replaced) != 1 || fresh.Replaced[0] != old.ID {
			t.Fatalf("replacement %s replaced %v; want a new id replacing %s", fresh.ID, fresh.Replaced, old.ID)
		}
		if fresh.AccountUpdate == "" || !decodeAccount(t, fresh.AccountUpdate).IsClaimRevoked(decodeUser(t, old.JWT)) {
			t.Error("the account update does not revoke the replaced JWT")
		}
		if decodeAccount(t, fresh.AccountUpdate).IsClaimRevoked(decodeUser(t, fresh.JWT)) {
			t.Error("the replacement is revoked by its own mint")
		}
		if rec, err := s.Record("alpha", old.ID); err != nil || !rec.Revoked || rec.Revision != 2 {
			t.Errorf("replaced record %+v, %v; want revoked at revision 2", rec, err)
		}
	})
	t.Run("a revoked holder frees the name", func(t *testing.T) {
		s := openStore(t)
		old := mint(t, s, MintRequest{Name: "eve"})
		if _, err := s.Revoke("alpha", old.ID); err != nil {
			t.Fatal(err)
		}
		mint(t, s, MintRequest{Name: "eve"})
	})
	t.Run("an expired holder frees the name", func(t *testing.T) {
		s := openStore(t)
		old := mint(t, s, MintRequest{Name: "eve", ExpiresIn: time.Second})
		waitUntil(t, old.ExpiresAt)
		mint(t, s, MintRequest{Name: "eve"})
	})
	t.Run("in-process credentials neither hold nor are refused a name", func(t *testing.T) {
		s := openStore(t)
		mint(t, s, MintRequest{Name: "eve", InProcessOnly: true, NoExpiry: true})
		mint(t, s, MintRequest{Name: "eve"})
		mint(t, s, MintRequest{Name: "eve", InProcessOnly: true, NoExpiry: true})
	})
}

// waitUntil returns once the wall clock is past at: credentials expire on the real clock.
func waitUntil(t *testing.T, at time.Time) {
	t.Helper()
	if d := time.Until(at); d > time.Minute {
		t.Fatalf("refusing to wait %v", d)
	}
	for !time.Now().After(at) {
		time.Sleep(time.Until(at) + time.Millisecond)
	}
}
