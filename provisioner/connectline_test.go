package provisioner

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nkeys"
)

// channels returns n concrete channel names.
func channels(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("project-%03d.backend", i)
	}
	return out
}

func TestMintRefusesACredentialTooLargeToConnect(t *testing.T) {
	wide := Grants{Subscribe: channels(300), AllowPublish: channels(300)}
	t.Run("300 channels are refused before anything is registered", func(t *testing.T) {
		s := openStore(t)
		_, err := s.Mint(MintRequest{Space: "alpha", Name: "wide", Profile: ProfileAgent, Grants: wide})
		if !errors.Is(err, ErrCredentialTooLarge) {
			t.Fatalf("Mint = %v; want ErrCredentialTooLarge", err)
		}
		for _, want := range []string{"max_control_line 65536", "channel grant entries", "fit", "wildcard"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %q", err, want)
			}
		}
		if recs, _ := s.List("alpha"); len(recs) != 0 {
			t.Errorf("the refused mint left %d registry rows", len(recs))
		}
	})
	t.Run("a refused re-mint leaves the old credential unrevoked", func(t *testing.T) {
		s := openStore(t)
		old := mint(t, s, MintRequest{Name: "wide"})
		kp, err := nkeys.FromSeed(old.Seed)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Mint(MintRequest{Space: "alpha", Name: "wide", Profile: ProfileAgent, Grants: wide, Identity: kp})
		if !errors.Is(err, ErrCredentialTooLarge) {
			t.Fatalf("re-mint = %v; want ErrCredentialTooLarge", err)
		}
		if spaceClaims(t, s).IsClaimRevoked(decodeUser(t, old.JWT)) {
			t.Error("the refused re-mint revoked the old credential")
		}
		if rec, _ := s.Record("alpha", old.ID); rec.Revision != 1 {
			t.Errorf("record revision %d after a refused re-mint, want 1", rec.Revision)
		}
	})
	t.Run("wildcard grants covering the same channels fit", func(t *testing.T) {
		s := openStore(t)
		mint(t, s, MintRequest{Name: "wide", Grants: Grants{Subscribe: []string{"*.backend"}, AllowPublish: []string{"*.backend"}}})
	})
}
