package provisioner

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nkeys"
)

// TestRevocationsArePrunedOnceTheirJWTsExpire revokes credentials of every lifetime, waits
// past the short ones' expiry and checks that adding a revocation, and then reopening the
// store, drops exactly what no JWT needs any more.
func TestRevocationsArePrunedOnceTheirJWTsExpire(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnsureSpace("alpha"); err != nil {
		t.Fatal(err)
	}
	revoked := func(req MintRequest) *Credential {
		c := mint(t, s, req)
		if _, err := s.Revoke("alpha", c.ID); err != nil {
			t.Fatal(err)
		}
		return c
	}
	short := revoked(MintRequest{Name: "short", ExpiresIn: time.Second})
	forever := revoked(MintRequest{Name: "forever", NoExpiry: true})
	long := revoked(MintRequest{Name: "long", ExpiresIn: time.Hour})
	lapsed := mint(t, s, MintRequest{Name: "lapsed", ExpiresIn: time.Second})
	late := mint(t, s, MintRequest{Name: "late", ExpiresIn: time.Second})
	// A non-expiring JWT re-minted with a short lifetime: the revocation made by the re-mint
	// still covers the non-expiring one once the short one expires.
	kp, _ := nkeys.CreateUser()
	remintedOld := mint(t, s, MintRequest{Name: "reminted", Identity: kp, NoExpiry: true})
	reminted := mint(t, s, MintRequest{Name: "reminted", Identity: kp, ExpiresIn: time.Second})
	waitUntil(t, reminted.ExpiresAt.Add(revocationGrace+time.Second))
	t.Run("revoking a long-expired credential keeps its row for the caller to read", func(t *testing.T) {
		if _, err := s.Revoke("alpha", late.ID); err != nil {
			t.Fatal(err)
		}
		if rec, err := s.Record("alpha", late.ID); err != nil || !rec.Revoked {
			t.Fatalf("record after Revoke: %+v, %v", rec, err)
		}
	})
	revoked(MintRequest{Name: "trigger"})

	t.Run("adding a revocation drops the expired ones and their rows", func(t *testing.T) {
		acct := spaceClaims(t, s)
		for _, c := range []*Credential{short, late} {
			if _, held := acct.Revocations[c.ID]; held {
				t.Errorf("the revocation of %s's expired JWT is still in the account JWT", c.Name)
			}
			if _, err := s.Record("alpha", c.ID); !errors.Is(err, ErrUnknownCredential) {
				t.Errorf("%s's expired, revoked row is still registered: %v", c.Name, err)
			}
		}
	})
	t.Run("a revocation some JWT still needs is kept", func(t *testing.T) {
		acct := spaceClaims(t, s)
		for _, c := range []*Credential{forever, long, remintedOld} {
			if !acct.IsClaimRevoked(decodeUser(t, c.JWT)) {
				t.Errorf("%s's JWT (expires %v) is no longer revoked", c.Name, c.ExpiresAt)
			}
		}
	})
	if _, err := s.Record("alpha", lapsed.ID); err != nil {
		t.Fatalf("an expired row without a revocation is pruned before a restart: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.EnsureSpace("alpha"); err != nil {
		t.Fatal(err)
	}
	t.Run("a restart drops the rows of expired credentials", func(t *testing.T) {
		if _, err := s.Record("alpha", lapsed.ID); !errors.Is(err, ErrUnknownCredential) {
			t.Errorf("the expired row is still registered after EnsureSpace: %v", err)
		}
		for _, c := range []*Credential{forever, long, remintedOld} {
			if _, err := s.Record("alpha", c.ID); err != nil {
				t.Errorf("%s's row, which a revocation needs, is gone: %v", c.Name, err)
			}
		}
	})
}
