package broker

import (
	"fmt"
	"sync"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
)

// TestConcurrentFirstConnectsToCircularAccountsAreAccepted covers a nats-server race: two
// accounts that import from each other (as a space's agent and storage accounts do) are
// loaded lazily, and while one lookup is still applying an account's claims a concurrent one
// is handed the half-built account (nats-server's tmpAccounts, which breaks the import
// cycle), without its signing keys; the connection is refused as "User JWT issuer is not
// known". It refused the mesh's own provisioner now and then at start (1 start in about 200
// under -race). Start loads every account before it returns, so no first connection races.
func TestConcurrentFirstConnectsToCircularAccountsAreAccepted(t *testing.T) {
	for round := range 20 {
		tt := newTestTrust(t)
		otherPub, otherSigner, other := newAppAccount(t)
		other.Name = "other"
		other.Exports.Add(&jwt.Export{Subject: "svc.>", Type: jwt.Service})
		other.Imports.Add(&jwt.Import{Account: tt.appPub, Subject: "events.>", Type: jwt.Stream})
		tt.appClaims.Exports.Add(&jwt.Export{Subject: "events.>", Type: jwt.Stream})
		tt.appClaims.Imports.Add(&jwt.Import{Account: otherPub, Subject: "svc.>", Type: jwt.Service})
		tt.appJWT = encode(t, tt.appClaims, tt.operatorSigner)
		cfg := operatorConfig(tt)
		cfg.Accounts[otherPub] = encode(t, other, tt.operatorSigner)
		b := startBroker(t, cfg)
		users := []testUser{tt.user(t, "a1"), tt.user(t, "a2"), tt.user(t, "a3"),
			mintUser(t, otherPub, otherSigner, "b1", nil), mintUser(t, otherPub, otherSigner, "b2", nil)}
		errs := make([]error, len(users))
		var wg sync.WaitGroup
		for i, u := range users {
			wg.Go(func() {
				nc, err := nats.Connect("", nats.InProcessServer(b.InProcess()), nats.NoReconnect(), u.option())
				if err == nil {
					nc.Close()
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: first connect of %s: %v", round, fmt.Sprint(users[i].pub[:8]), err)
			}
		}
		shutdown(t, b)
	}
}
