package provisioner

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/cotal-go/cotal/wire"
	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

func TestMintSignsWithTheSpaceSigningKey(t *testing.T) {
	s := openStore(t)
	g := Grants{Subscribe: []string{"general"}, AllowPublish: []string{"general"}, Role: "Reviewer"}
	c := mint(t, s, MintRequest{Name: "Ada", Grants: g})
	uc := decodeUser(t, c.JWT)
	alpha, _ := s.Space("alpha")

	t.Run("the JWT is issued by the signing key on behalf of the account", func(t *testing.T) {
		if uc.Issuer != alpha.SigningKey || uc.IssuerAccount != alpha.PublicKey {
			t.Errorf("issuer %s account %s, want %s for %s", uc.Issuer, uc.IssuerAccount, alpha.SigningKey, alpha.PublicKey)
		}
		if !decodeAccount(t, alpha.JWT).DidSign(uc) {
			t.Error("the account does not recognise the JWT's signer")
		}
	})
	t.Run("the subject is the credential id and the seed's public key", func(t *testing.T) {
		kp, err := nkeys.FromSeed(c.Seed)
		if err != nil {
			t.Fatal(err)
		}
		pub, _ := kp.PublicKey()
		if uc.Subject != c.ID || pub != c.ID {
			t.Errorf("subject %s, seed key %s, id %s", uc.Subject, pub, c.ID)
		}
	})
	t.Run("name and tags carry the display name, profile, role and subscribe channels with case kept", func(t *testing.T) {
		want := jwt.TagList{"cotal-profile:agent", "cotal-role:Reviewer", "cotal-subscribe:general"}
		if uc.Name != "Ada" || !reflect.DeepEqual(uc.Tags, want) {
			t.Errorf("name %q tags %v, want Ada %v", uc.Name, uc.Tags, want)
		}
	})
	t.Run("the permissions are the agent profile's", func(t *testing.T) {
		want, err := Permissions(ProfileAgent, wire.NewNames("alpha"), c.ID, g.withDefaults())
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(uc.Permissions, want) {
			t.Errorf("JWT permissions %+v, want %+v", uc.Permissions, want)
		}
	})
	t.Run("the credential reports the effective grants and ACL", func(t *testing.T) {
		if !reflect.DeepEqual(c.Grants.AllowSubscribe, []string{"general"}) || !reflect.DeepEqual(c.ACL.AllowSubscribe, []string{"general"}) {
			t.Errorf("grants %+v ACL %+v", c.Grants, c.ACL)
		}
		a, err := s.Space("alpha")
		if err != nil {
			t.Fatal(err)
		}
		if c.AccountUpdate != "" || !importsInbox(decodeAccount(t, a.JWT), c.ID) {
			t.Error("a new space's first mint re-signed the agent account, or the account does not import its inbox")
		}
	})
}

func TestMintExpiry(t *testing.T) {
	s := openStore(t)
	at := time.Now().Add(90 * time.Minute).Truncate(time.Second)
	tests := []struct {
		name string
		req  MintRequest
		want func(iat time.Time) time.Time
	}{
		{"the default lifetime is 24 hours", MintRequest{}, func(iat time.Time) time.Time { return iat.Add(24 * time.Hour) }},
		{"ExpiresIn counts from the issue time", MintRequest{ExpiresIn: time.Hour}, func(iat time.Time) time.Time { return iat.Add(time.Hour) }},
		{"ExpiresAt is taken as given", MintRequest{ExpiresAt: at}, func(time.Time) time.Time { return at }},
		{"NoExpiry sets no expiry", MintRequest{NoExpiry: true}, func(time.Time) time.Time { return time.Time{} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Name = tt.name
			c := mint(t, s, tt.req)
			uc := decodeUser(t, c.JWT)
			want := tt.want(time.Unix(uc.IssuedAt, 0))
			// The JWT stores seconds; the expiry is computed a moment before signing.
			if d := c.ExpiresAt.Sub(want); d < -time.Second || d > time.Second {
				t.Errorf("ExpiresAt %v, want %v", c.ExpiresAt, want)
			}
			if want.IsZero() != (uc.Expires == 0) {
				t.Errorf("JWT exp %d, want zero=%v", uc.Expires, want.IsZero())
			}
			rec, err := s.Record("alpha", c.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !rec.ExpiresAt.Equal(c.ExpiresAt) {
				t.Errorf("record expiry %v, credential %v", rec.ExpiresAt, c.ExpiresAt)
			}
		})
	}
}

func TestMintRefusesBadRequests(t *testing.T) {
	s := openStore(t)
	pubOnly, _ := nkeys.FromPublicKey(testID)
	acct, _ := nkeys.CreateAccount()
	tests := []struct {
		name string
		req  MintRequest
		want error
	}{
		{"two expiry options are refused", MintRequest{ExpiresIn: time.Hour, NoExpiry: true}, ErrInvalidRequest},
		{"a negative ExpiresIn is refused", MintRequest{ExpiresIn: -time.Hour}, ErrInvalidRequest},
		{"an ExpiresAt in the past is refused", MintRequest{ExpiresAt: time.Now().Add(-time.Minute)}, ErrInvalidRequest},
		{"an identity without a seed is refused", MintRequest{Identity: pubOnly}, ErrInvalidRequest},
		{"an identity that is not a user key is refused", MintRequest{Identity: acct}, ErrInvalidRequest},
		{"an unknown space is refused", MintRequest{Space: "beta"}, ErrUnknownSpace},
		{"an infrastructure profile is refused", MintRequest{Profile: ProfileDelivery}, ErrUnknownProfile},
		{"an observer with ACL flags is refused", MintRequest{Profile: ProfileObserver, Grants: Grants{AllowSubscribe: []string{"x"}}}, ErrGrantsNotAllowed},
		{"a subscribe outside allowSubscribe is refused", MintRequest{Grants: Grants{Subscribe: []string{"a"}, AllowSubscribe: []string{"b"}}}, ErrInvalidGrant},
		{"a policy string with a slash is refused", MintRequest{Grants: Grants{Subscribe: []string{"foo/bar"}}}, ErrInvalidGrant},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			if req.Space == "" {
				req.Space = "alpha"
			}
			if req.Profile == "" {
				req.Profile = ProfileAgent
			}
			req.Name = "ada"
			if _, err := s.Mint(req); !errors.Is(err, tt.want) {
				t.Errorf("Mint = %v, want %v", err, tt.want)
			}
		})
	}
	t.Run("an empty name is refused", func(t *testing.T) {
		if _, err := s.Mint(MintRequest{Space: "alpha", Profile: ProfileAgent}); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("Mint = %v, want ErrInvalidRequest", err)
		}
	})
	t.Run("a refused request records nothing", func(t *testing.T) {
		if recs, _ := s.List("alpha"); len(recs) != 0 {
			t.Errorf("registry holds %d records", len(recs))
		}
	})
}

func TestRemintRevokesThePreviousCredential(t *testing.T) {
	s := openStore(t)
	old := mint(t, s, MintRequest{Grants: Grants{Subscribe: []string{"general", "secret"}}})
	kp, err := nkeys.FromSeed(old.Seed)
	if err != nil {
		t.Fatal(err)
	}
	// Minted in the same second as old: the revocation covers that second, so the new JWT
	// must be issued in a later one.
	fresh := mint(t, s, MintRequest{Identity: kp, Grants: Grants{Subscribe: []string{"general"}}})

	if fresh.ID != old.ID {
		t.Fatalf("re-mint changed the id from %s to %s", old.ID, fresh.ID)
	}
	if fresh.AccountUpdate == "" {
		t.Fatal("re-mint returned no account update")
	}
	acct := decodeAccount(t, fresh.AccountUpdate)
	if !acct.IsClaimRevoked(decodeUser(t, old.JWT)) {
		t.Error("the old JWT is not revoked")
	}
	if acct.IsClaimRevoked(decodeUser(t, fresh.JWT)) {
		t.Error("the new JWT is revoked by its own re-mint")
	}
	if a, _ := s.Space("alpha"); a.JWT != fresh.AccountUpdate {
		t.Error("the stored account JWT is not the returned update")
	}
	rec, err := s.Record("alpha", old.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Revision != 2 || rec.Revoked || !reflect.DeepEqual(rec.Grants.AllowSubscribe, []string{"general"}) {
		t.Errorf("record after re-mint: %+v", rec)
	}
	if fresh.ACL.Revision != 2 || !reflect.DeepEqual(fresh.ACL.AllowSubscribe, []string{"general"}) {
		t.Errorf("ACL after re-mint: %+v", fresh.ACL)
	}
}

func TestRemintAfterRevokeIsNotRevoked(t *testing.T) {
	s := openStore(t)
	old := mint(t, s, MintRequest{})
	if _, err := s.Revoke("alpha", old.ID); err != nil {
		t.Fatal(err)
	}
	kp, _ := nkeys.FromSeed(old.Seed)
	revokedAt := spaceClaims(t, s).Revocations[old.ID]
	fresh := mint(t, s, MintRequest{Identity: kp})
	if acct := decodeAccount(t, fresh.AccountUpdate); acct.Revocations[old.ID] != revokedAt || !importsInbox(acct, old.ID) {
		t.Errorf("re-minting a revoked id: revocation %d (was %d), inbox imported %v; want the revocation kept and the inbox back",
			acct.Revocations[old.ID], revokedAt, importsInbox(acct, old.ID))
	}
	if spaceClaims(t, s).IsClaimRevoked(decodeUser(t, fresh.JWT)) {
		t.Error("the new JWT falls inside the earlier revocation")
	}
	if rec, _ := s.Record("alpha", old.ID); rec.Revoked || rec.Revision != 3 {
		t.Errorf("record after revoke and re-mint: %+v", rec)
	}
}

func TestInfraCredential(t *testing.T) {
	s := openStore(t)
	for _, p := range []Profile{ProfileProvisioner, ProfileDelivery, ProfileLeafRelay, ProfileManagerControl} {
		t.Run(string(p)+" is in-process only, unexpiring and unrecorded", func(t *testing.T) {
			c, err := s.InfraCredential("alpha", p)
			if err != nil {
				t.Fatal(err)
			}
			uc := decodeUser(t, c.JWT)
			if uc.Expires != 0 || !c.ExpiresAt.IsZero() {
				t.Errorf("expires %d", uc.Expires)
			}
			if !reflect.DeepEqual(uc.AllowedConnectionTypes, jwt.StringList{jwt.ConnectionTypeInProcess}) {
				t.Errorf("allowed connection types %v", uc.AllowedConnectionTypes)
			}
			want, _ := Permissions(p, wire.NewNames("alpha"), c.ID, Grants{})
			if !reflect.DeepEqual(uc.Permissions, want) {
				t.Errorf("permissions are not the %s profile's", p)
			}
			if _, err := s.Record("alpha", c.ID); !errors.Is(err, ErrUnknownCredential) {
				t.Errorf("Record = %v, want ErrUnknownCredential", err)
			}
		})
	}
	t.Run("the leaf relay and manager control are users of the agent account, the others of the storage account", func(t *testing.T) {
		alpha, _ := s.Space("alpha")
		for p, account := range map[Profile]string{ProfileLeafRelay: alpha.PublicKey, ProfileManagerControl: alpha.PublicKey,
			ProfileDelivery: alpha.Storage} {
			c, err := s.InfraCredential("alpha", p)
			if err != nil {
				t.Fatal(err)
			}
			if got := decodeUser(t, c.JWT).IssuerAccount; got != account {
				t.Errorf("%s is a user of %s, want %s", p, got, account)
			}
		}
	})
	t.Run("a user profile is refused", func(t *testing.T) {
		if _, err := s.InfraCredential("alpha", ProfileAdmin); !errors.Is(err, ErrUnknownProfile) {
			t.Errorf("InfraCredential(admin) = %v, want ErrUnknownProfile", err)
		}
	})
	t.Run("an unknown space is refused", func(t *testing.T) {
		if _, err := s.InfraCredential("beta", ProfileDelivery); !errors.Is(err, ErrUnknownSpace) {
			t.Errorf("InfraCredential(beta) = %v, want ErrUnknownSpace", err)
		}
	})
}

func TestConcurrentMintsAreAllRecorded(t *testing.T) {
	s := openStore(t)
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			_, err := s.Mint(MintRequest{Space: "alpha", Name: fmt.Sprintf("ada%d", i), Profile: ProfileAgent})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if recs, err := s.List("alpha"); err != nil || len(recs) != n {
		t.Errorf("List = %d records, %v; want %d", len(recs), err, n)
	}
}

// Every minted credential carries Options.Limits' subscription and payload bounds in its user
// JWT; the mesh's own infrastructure credentials carry none.
func TestMintedCredentialsCarryTheUserLimits(t *testing.T) {
	opts := DefaultOptions()
	opts.Limits = Limits{Connections: 100, Subscriptions: 300, Payload: 64 << 10}
	s, err := Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.EnsureSpace("alpha"); err != nil {
		t.Fatal(err)
	}
	infra, err := s.InfraCredential("alpha", ProfileDelivery)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		jwt         string
		subs, bytes int64
	}{
		{"an agent credential is bounded", mint(t, s, MintRequest{Profile: ProfileAgent}).JWT, 300, 64 << 10},
		{"an admin credential is bounded", mint(t, s, MintRequest{Name: "root", Profile: ProfileAdmin}).JWT, 300, 64 << 10},
		{"the delivery credential is not", infra.JWT, jwt.NoLimit, jwt.NoLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := decodeUser(t, tt.jwt).Limits
			if l.Subs != tt.subs || l.Payload != tt.bytes {
				t.Fatalf("user JWT subs %d, payload %d; want %d, %d", l.Subs, l.Payload, tt.subs, tt.bytes)
			}
		})
	}
}

func TestALeafCredentialConnectsAsALeafNodeOnly(t *testing.T) {
	s := openStore(t)
	c := mint(t, s, MintRequest{Name: "laptop", Profile: ProfileLeaf, NoExpiry: true})
	uc := decodeUser(t, c.JWT)
	if !reflect.DeepEqual(uc.AllowedConnectionTypes, jwt.StringList{jwt.ConnectionTypeLeafnode}) {
		t.Errorf("allowed connection types %v, want LEAFNODE only", uc.AllowedConnectionTypes)
	}
	want, _ := Permissions(ProfileLeaf, wire.NewNames("alpha"), c.ID, Grants{})
	if !reflect.DeepEqual(uc.Permissions, want) {
		t.Error("permissions are not the leaf profile's")
	}
	if _, err := s.Mint(MintRequest{Space: "alpha", Name: "laptop2", Profile: ProfileLeaf, Grants: Grants{Role: "x"}}); !errors.Is(err, ErrGrantsNotAllowed) {
		t.Errorf("a leaf credential with a role: %v, want ErrGrantsNotAllowed", err)
	}
}
