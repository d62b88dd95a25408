package space_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
)

// TestARefusedCredentialIsNamedInTheLog connects with a revoked credential and with a user JWT
// that claims the space's account but was signed by a key of the attacker's: the log names
// the revoked agent and why, and says nothing of the forged name, whose claims anyone writes.
func TestARefusedCredentialIsNamedInTheLog(t *testing.T) {
	t.Parallel()
	m, logs := loggedMesh(t, func(*space.Options) {})
	bob := mint(t, m, "bob", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}})
	if err := m.Revoke(context.Background(), "main", bob.ID); err != nil {
		t.Fatal(err)
	}
	uc, err := jwt.DecodeUserClaims(bob.JWT)
	if err != nil {
		t.Fatal(err)
	}
	forgedJWT, forgedSeed := forgeUser(t, uc.IssuerAccount, "alice-forged")
	for _, c := range []struct{ jwt, seed string }{{forgedJWT, forgedSeed}, {bob.JWT, string(bob.Seed)}} {
		nc, err := nats.Connect("", nats.InProcessServer(m.InProcess()), nats.UserJWTAndSeed(c.jwt, c.seed),
			nats.NoReconnect(), nats.MaxReconnects(0))
		if err == nil {
			nc.Close()
			t.Fatal("the broker accepted a revoked or forged credential")
		}
	}
	await.True(t, 10*time.Second, "a log line naming bob as revoked", func() bool {
		for line := range strings.Lines(logs.String()) {
			if strings.Contains(line, "refused a credential") && strings.Contains(line, "name=bob") &&
				strings.Contains(line, "revoked") && strings.Contains(line, bob.ID) {
				return true
			}
		}
		return false
	})
	// The events come in order on one subscription: the forged one was read before bob's.
	if strings.Contains(logs.String(), "alice-forged") {
		t.Errorf("the log names a forged credential's claims:\n%s", logs)
	}
}

// forgeUser signs a user JWT naming account as its issuer account with a signing key the
// account never listed.
func forgeUser(t *testing.T, account, name string) (token, seed string) {
	t.Helper()
	signer, _ := nkeys.CreateAccount()
	user, _ := nkeys.CreateUser()
	pub, _ := user.PublicKey()
	uc := jwt.NewUserClaims(pub)
	uc.Name, uc.IssuerAccount = name, account
	token, err := uc.Encode(signer)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := user.Seed()
	return token, string(s)
}
