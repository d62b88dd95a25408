package provisioner

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestForgetDeletesTheRowsOfCredentialsThatCanNoLongerConnect(t *testing.T) {
	s := openStore(t)
	expiring := mint(t, s, MintRequest{Name: "cli-send-ada-x1", ExpiresIn: time.Hour})
	forever := mint(t, s, MintRequest{Name: "bob", NoExpiry: true})
	later := mint(t, s, MintRequest{Name: "carol", ExpiresIn: 3 * time.Hour})
	// A revoked credential's row stays while its revocation does: Revoke's caller reads it.
	revoked := mint(t, s, MintRequest{Name: "dave", ExpiresIn: time.Hour})
	if _, err := s.Revoke("alpha", revoked.ID); err != nil {
		t.Fatal(err)
	}
	now := time.Now()

	t.Run("before anything expired nothing is forgotten", func(t *testing.T) {
		if gone, err := s.Forget("alpha", now); err != nil || len(gone) != 0 {
			t.Fatalf("Forget = %v, %v; want nothing", gone, err)
		}
	})
	t.Run("just past its expiry a row stays, for the broker's last second and a late revoke", func(t *testing.T) {
		if gone, err := s.Forget("alpha", expiring.ExpiresAt.Add(time.Second)); err != nil || len(gone) != 0 {
			t.Fatalf("Forget = %v, %v; want nothing within the grace", gone, err)
		}
	})
	t.Run("an expired credential's row goes, and only its", func(t *testing.T) {
		gone, err := s.Forget("alpha", now.Add(2*time.Hour))
		if err != nil || len(gone) != 1 || gone[0].ID != expiring.ID {
			t.Fatalf("Forget = %+v, %v; want only %s", gone, err, expiring.Name)
		}
		if _, err := s.Record("alpha", expiring.ID); !errors.Is(err, ErrUnknownCredential) {
			t.Fatalf("the expired row is still registered: %v", err)
		}
		for _, c := range []*Credential{forever, later, revoked} {
			if _, err := s.Record("alpha", c.ID); err != nil {
				t.Errorf("%s's row is gone: %v", c.Name, err)
			}
		}
	})
	t.Run("an unknown space is an error", func(t *testing.T) {
		if _, err := s.Forget("nosuch", now); !errors.Is(err, ErrUnknownSpace) {
			t.Fatalf("Forget of an unknown space = %v, want ErrUnknownSpace", err)
		}
	})
	t.Run("a forgotten name can be minted again", func(t *testing.T) {
		mint(t, s, MintRequest{Name: expiring.Name, ExpiresIn: time.Hour})
	})
	t.Run("the registry keeps every other row", func(t *testing.T) {
		recs, err := s.List("alpha")
		if err != nil {
			t.Fatal(err)
		}
		names := make([]string, 0, len(recs))
		for _, r := range recs {
			names = append(names, r.Name)
		}
		slices.Sort(names)
		if want := []string{"bob", "carol", "cli-send-ada-x1", "dave"}; !slices.Equal(names, want) {
			t.Fatalf("registry %v, want %v", names, want)
		}
	})
}

// BenchmarkForgetWithNothingToForget is the cost a running mesh pays per reconcile pass for a
// registry of 1 000 live credentials.
func BenchmarkForgetWithNothingToForget(b *testing.B) {
	s := openStore(b)
	for i := range 1000 {
		if _, err := s.Mint(MintRequest{Space: "alpha", Name: fmt.Sprintf("agent-%d", i), Profile: ProfileAgent,
			ExpiresIn: time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
	now := time.Now()
	for b.Loop() {
		if gone, err := s.Forget("alpha", now); err != nil || len(gone) != 0 {
			b.Fatal(gone, err)
		}
	}
}

func TestInProcessCredentialsOfAnEarlierRunAreForgotten(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnsureSpace("alpha"); err != nil {
		t.Fatal(err)
	}
	inProc := mint(t, s, MintRequest{Name: "console", NoExpiry: true, InProcessOnly: true})
	agent := mint(t, s, MintRequest{Name: "bob", NoExpiry: true})
	if gone, err := s.Forget("alpha", time.Now()); err != nil || len(gone) != 0 {
		t.Fatalf("Forget in the run that minted it = %v, %v; want nothing", gone, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	t.Run("a running mesh forgets it", func(t *testing.T) {
		s, err := Open(dir, DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		gone, err := s.Forget("alpha", time.Now())
		if err != nil || len(gone) != 1 || gone[0].ID != inProc.ID {
			t.Fatalf("Forget in a later run = %+v, %v; want only the in-process credential", gone, err)
		}
		mint(t, s, MintRequest{Name: "console", NoExpiry: true, InProcessOnly: true})
	})
	t.Run("start forgets it too", func(t *testing.T) {
		s, err := Open(dir, DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := s.EnsureSpace("alpha"); err != nil {
			t.Fatal(err)
		}
		recs, err := s.List("alpha")
		if err != nil || len(recs) != 1 || recs[0].ID != agent.ID {
			t.Fatalf("registry after a restart = %+v, %v; want only bob", recs, err)
		}
	})
}

// TestForgetOnRevokeDropsTheRowAndKeepsTheRevocation: the row of a credential minted with
// ForgetOnRevoke goes at the first Forget after its revocation, while the revocation stays in
// the account JWT until the credential's JWT expires.
func TestForgetOnRevokeDropsTheRowAndKeepsTheRevocation(t *testing.T) {
	s := openStore(t)
	tail := mint(t, s, MintRequest{Name: "cli-tail-ada-x1", ExpiresIn: 24 * time.Hour, ForgetOnRevoke: true})
	kept := mint(t, s, MintRequest{Name: "dave", ExpiresIn: 24 * time.Hour})
	if gone, err := s.Forget("alpha", time.Now()); err != nil || len(gone) != 0 {
		t.Fatalf("Forget before any revocation = %v, %v; want nothing", gone, err)
	}
	for _, c := range []*Credential{tail, kept} {
		if _, err := s.Revoke("alpha", c.ID); err != nil {
			t.Fatal(err)
		}
	}
	gone, err := s.Forget("alpha", time.Now())
	if err != nil || len(gone) != 1 || gone[0].ID != tail.ID {
		t.Fatalf("Forget after the revocations = %+v, %v; want only %s", gone, err, tail.Name)
	}
	if _, err := s.Record("alpha", tail.ID); !errors.Is(err, ErrUnknownCredential) {
		t.Fatalf("the revoked row is still registered: %v", err)
	}
	if rec, err := s.Record("alpha", kept.ID); err != nil || !rec.Revoked {
		t.Fatalf("a revoked row without ForgetOnRevoke = %+v, %v; want it kept, revoked", rec, err)
	}
	if !spaceClaims(t, s).IsClaimRevoked(decodeUser(t, tail.JWT)) {
		t.Fatal("forgetting the row dropped its revocation")
	}
}
