package endpoint_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/space/spacetest"
)

func TestParseCredentialReadsWhatTheMintWrote(t *testing.T) {
	m := spacetest.New(t)
	expires := time.Now().Add(time.Hour).Truncate(time.Second)
	tests := []struct {
		name          string
		spec          admin.MintSpec
		read, publish []string
	}{
		{"an agent's ACLs and role come from its grants and tags",
			admin.MintSpec{Name: "alice", Profile: "agent", Role: "Reviewer", Subscribe: []string{"general"},
				AllowSubscribe: []string{"general", "team.>"}, AllowPublish: []string{"general", "team.*"}, ExpiresAt: expires},
			[]string{"general", "team.>"}, []string{"general", "team.*"}},
		{"an observer reads every channel and sends to none",
			admin.MintSpec{Name: "obs", Profile: "observer", ExpiresAt: expires}, []string{">"}, []string{}},
		{"an admin reads every channel and sends to none",
			admin.MintSpec{Name: "adm", Profile: "admin", ExpiresAt: expires}, []string{">"}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.Space = "main"
			cred, err := admin.Mint(ctxT(t), m, tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			c, err := endpoint.ParseCredential(cred.Creds)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			want := endpoint.Credential{ID: cred.ID, Name: tt.spec.Name, Space: "main", Profile: tt.spec.Profile,
				Role: tt.spec.Role, ReadACL: tt.read, PublishACL: tt.publish, Expires: expires}
			if c.ID != want.ID || c.Name != want.Name || c.Space != want.Space || c.Profile != want.Profile ||
				c.Role != want.Role || !slices.Equal(c.ReadACL, want.ReadACL) || !slices.Equal(c.PublishACL, want.PublishACL) ||
				!c.Expires.Equal(want.Expires) {
				t.Fatalf("parsed %+v, want %+v", c, want)
			}
		})
	}
}

func TestParseCredentialRefusesWhatIsNoUserCredential(t *testing.T) {
	_, alice := userCreds(t, "alice")
	_, bob := userCreds(t, "bob")
	// The JWT block of one credential with the seed block of another.
	jwtEnd := strings.Index(string(alice), "------END NATS USER JWT------")
	seedStart := strings.Index(string(bob), "************************* IMPORTANT")
	mixed := append([]byte(string(alice[:jwtEnd])+"------END NATS USER JWT------\n\n"), bob[seedStart:]...)
	for _, tt := range []struct {
		name  string
		creds []byte
	}{
		{"text that is no credential", []byte("not a credential")},
		{"a JWT with another key's seed", mixed},
		{"nothing", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := endpoint.ParseCredential(tt.creds); !errors.Is(err, endpoint.ErrBadCredential) {
				t.Fatalf("parse: %v, want ErrBadCredential", err)
			}
			if _, err := endpoint.CredentialSeed(tt.creds); !errors.Is(err, endpoint.ErrBadCredential) {
				t.Fatalf("seed: %v, want ErrBadCredential", err)
			}
		})
	}
}

func TestCredentialSeedIsTheSeedOfTheCredentialsKey(t *testing.T) {
	id, creds := userCreds(t, "alice")
	seed, err := endpoint.CredentialSeed(creds)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := nkeys.FromSeed([]byte(seed))
	if err != nil {
		t.Fatalf("the seed is no nkey seed: %v", err)
	}
	if pub, _ := kp.PublicKey(); pub != id {
		t.Fatalf("the seed belongs to %s, want the credential's id %s", pub, id)
	}
}

// TestACredentialThatEndsSaysWhyAndWhatToDo: an Endpoint whose credential expires, or is
// revoked, stops with an error that says which and what to do, not a bare authorization
// violation.
func TestACredentialThatEndsSaysWhyAndWhatToDo(t *testing.T) {
	m := spacetest.New(t)
	for _, tc := range []struct {
		name string
		spec admin.MintSpec
		end  func(t *testing.T, cred *admin.MintedCredential)
		want error
		says string
	}{
		{"it expires", admin.MintSpec{Name: "brief", ExpiresAt: time.Now().Add(4 * time.Second)},
			func(*testing.T, *admin.MintedCredential) {}, endpoint.ErrCredentialExpired, "mint a new one"},
		{"it is revoked", admin.MintSpec{Name: "revoked", NoExpiry: true},
			func(t *testing.T, cred *admin.MintedCredential) {
				if err := m.Revoke(ctxT(t), "main", cred.ID); err != nil {
					t.Fatal(err)
				}
			}, endpoint.ErrCredentialRefused, "ask whoever runs the mesh"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.Space, tc.spec.Profile = "main", "agent"
			cred, err := admin.Mint(ctxT(t), m, tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			e, err := endpoint.Connect(ctxT(t), endpoint.Options{InProcess: m.InProcess(), Space: "main", Creds: cred.Creds,
				ReconnectWait: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close(context.Background())
			tc.end(t, cred)
			select {
			case <-e.Done():
			case <-time.After(30 * time.Second):
				t.Fatal("the Endpoint did not stop")
			}
			if err := e.Err(); !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Err() = %v; want %v saying %q", err, tc.want, tc.says)
			}
		})
	}
}
