package space_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"

	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
)

// credOf turns the .creds text the admin socket hands out into the credential the raw
// connection helpers take.
func credOf(t *testing.T, mc *admin.MintedCredential) *provisioner.Credential {
	t.Helper()
	token, err := jwt.ParseDecoratedJWT(mc.Creds)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := jwt.ParseDecoratedNKey(mc.Creds)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	return &provisioner.Credential{ID: mc.ID, Name: mc.Name, Space: mc.Space, JWT: token, Seed: seed}
}

func TestMintRefusesASecondActiveCredentialOfOneName(t *testing.T) {
	m := spacetest.New(t)
	ctx := context.Background()
	spec := admin.MintSpec{Space: "main", Name: "eve", Profile: "agent", Subscribe: []string{"general", "secret"}}
	first, err := admin.Mint(ctx, m, spec)
	if err != nil {
		t.Fatal(err)
	}
	wide := credOf(t, first)
	narrow := spec
	narrow.Subscribe = []string{"general"}

	t.Run("a plain second mint of the name is refused and the first credential is untouched", func(t *testing.T) {
		if _, err := admin.Mint(ctx, m, narrow); !errors.Is(err, provisioner.ErrNameInUse) {
			t.Fatalf("second mint of eve = %v; want ErrNameInUse", err)
		}
		connect(t, m, wide).Close()
		if recs, _ := m.Credentials("main"); len(recs) != 1 {
			t.Errorf("registry holds %d credentials, want 1", len(recs))
		}
	})
	var reminted *provisioner.Credential
	t.Run("naming the old identity re-mints it and cuts the wide JWT off", func(t *testing.T) {
		remint := narrow
		remint.IdentitySeed = string(wide.Seed)
		mc, err := admin.Mint(ctx, m, remint)
		if err != nil {
			t.Fatal(err)
		}
		if reminted = credOf(t, mc); reminted.ID != wide.ID {
			t.Fatalf("re-mint changed the id from %s to %s", wide.ID, reminted.ID)
		}
		refusedConnect(t, m, wide)
	})
	t.Run("Replace revokes the old credential and disconnects it", func(t *testing.T) {
		held := watchConn(t, m, reminted)
		replace := narrow
		replace.Replace = true
		mc, err := admin.Mint(ctx, m, replace)
		if err != nil {
			t.Fatal(err)
		}
		held.cutOff(t, nats.ErrAuthRevoked)
		refusedConnect(t, m, reminted)
		connect(t, m, credOf(t, mc)).Close()
		rec := record(t, m, reminted.ID)
		if !rec.Revoked {
			t.Errorf("the replaced record is not revoked: %+v", rec)
		}
	})
}

// record returns the registry row of id in space main.
func record(t *testing.T, m *space.Mesh, id string) provisioner.Record {
	t.Helper()
	recs, err := m.Credentials("main")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no registry row for %s", id)
	return provisioner.Record{}
}

// channelGrants grants n concrete channels for reading and posting.
func channelGrants(n int) provisioner.Grants {
	chs := make([]string, n)
	for i := range chs {
		chs[i] = fmt.Sprintf("project-%03d.backend", i)
	}
	return provisioner.Grants{Subscribe: chs, AllowPublish: chs}
}

func TestMintRefusesACredentialThatCannotConnect(t *testing.T) {
	m := spacetest.New(t)
	ctx := context.Background()
	t.Run("300 channels are refused and nothing is registered", func(t *testing.T) {
		_, err := m.Mint(ctx, provisioner.MintRequest{Space: "main", Name: "wide", Profile: provisioner.ProfileAgent,
			Grants: channelGrants(300)})
		if !errors.Is(err, provisioner.ErrCredentialTooLarge) {
			t.Fatalf("mint of 300 channels = %v; want ErrCredentialTooLarge", err)
		}
		if recs, _ := m.Credentials("main"); len(recs) != 0 {
			t.Errorf("the refused mint left %d registry rows", len(recs))
		}
	})
	t.Run("the largest credential mint accepts connects, with a long client name", func(t *testing.T) {
		// Bisect on the channel count: lo always mints, hi never does.
		lo, hi := 1, 300
		var largest *provisioner.Credential
		for hi-lo > 1 {
			n := (lo + hi) / 2
			cred, err := m.Mint(ctx, provisioner.MintRequest{Space: "main", Name: fmt.Sprintf("fit-%d", n),
				Profile: provisioner.ProfileAgent, Grants: channelGrants(n)})
			switch {
			case errors.Is(err, provisioner.ErrCredentialTooLarge):
				hi = n
			case err != nil:
				t.Fatal(err)
			default:
				lo, largest = n, cred
			}
		}
		if largest == nil {
			t.Fatal("no channel count between 1 and 300 mints")
		}
		t.Logf("%d channels fit: a %d-byte user JWT", lo, len(largest.JWT))
		nc := connect(t, m, largest, nats.Name(strings.Repeat("n", 2048)))
		if err := nc.FlushTimeout(answerWait); err != nil {
			t.Fatalf("the largest credential cannot talk to the broker: %v", err)
		}
	})
}

// TestRevocationsAreBoundedByLiveCredentials checks that the account JWT the broker loads
// keeps only the revocations some JWT still needs, and that pruning never lets a revoked
// credential back in, across a restart.
func TestRevocationsAreBoundedByLiveCredentials(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	m := startOn(ctx, t, dir)
	revoked := func(name string, req provisioner.MintRequest) *provisioner.Credential {
		req.Space, req.Name, req.Profile = "main", name, provisioner.ProfileAgent
		cred := mintWith(t, m, req)
		if err := m.Revoke(ctx, "main", cred.ID); err != nil {
			t.Fatal(err)
		}
		return cred
	}
	short := revoked("short", provisioner.MintRequest{ExpiresIn: time.Second})
	forever := revoked("forever", provisioner.MintRequest{NoExpiry: true})
	// The provisioner keeps a revocation a few seconds past the JWT's expiry.
	deadline := short.ExpiresAt.Add(7 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(time.Until(deadline))
	}
	trigger := revoked("trigger", provisioner.MintRequest{})
	refusedConnect(t, m, forever)
	refusedConnect(t, m, trigger)
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}

	t.Run("the account JWT drops the revocation of the expired JWT and keeps the others", func(t *testing.T) {
		acct := accountOf(t, dir)
		if _, held := acct.Revocations[short.ID]; held {
			t.Error("the revocation of an expired JWT is still in the account JWT")
		}
		for _, c := range []*provisioner.Credential{forever, trigger} {
			if _, held := acct.Revocations[c.ID]; !held {
				t.Errorf("the revocation of %s is gone", c.Name)
			}
		}
	})
	t.Run("after a restart the revoked credentials stay out and a new one connects", func(t *testing.T) {
		m := startOn(ctx, t, dir)
		refusedConnect(t, m, forever)
		refusedConnect(t, m, trigger)
		connect(t, m, mint(t, m, "fresh", provisioner.ProfileAgent, provisioner.Grants{})).Close()
	})
}

// accountOf decodes space main's account JWT from dir's key store; no mesh may hold it.
func accountOf(t *testing.T, dir string) *jwt.AccountClaims {
	t.Helper()
	s, err := provisioner.Open(dir, provisioner.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, err := s.Space("main")
	if err != nil {
		t.Fatal(err)
	}
	acct, err := jwt.DecodeAccountClaims(a.JWT)
	if err != nil {
		t.Fatal(err)
	}
	return acct
}
