package broker

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
)

func TestRevokingAUserDisconnectsItAndRefusesItsReturn(t *testing.T) {
	tt := newTestTrust(t)
	b := startBroker(t, operatorConfig(tt))
	alice, bob := tt.user(t, "alice"), tt.user(t, "bob")
	closed := make(chan struct{})
	aliceConn := connect(t, b, alice.option(), nats.NoReconnect(),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})) // the revocation notice is expected
	bobConn := connect(t, b, bob.option())

	if err := b.UpdateAccount(tt.revoke(t, alice)); err != nil {
		t.Fatalf("UpdateAccount with alice revoked: %v", err)
	}

	t.Run("the connected revoked user is disconnected", func(t *testing.T) {
		select {
		case <-closed:
		case <-time.After(30 * time.Second):
			t.Fatalf("alice still connected after revocation: status %v", aliceConn.Status())
		}
	})
	t.Run("the revoked user cannot connect again", func(t *testing.T) { refused(t, b, alice.option()) })
	t.Run("other users of the account are untouched", func(t *testing.T) {
		roundTrip(t, bobConn)
	})
}

func TestUpdateAccountAddsAnAccountAtRunTime(t *testing.T) {
	tt := newTestTrust(t)
	b := startBroker(t, operatorConfig(tt))
	pub, signer, claims := newAppAccount(t)
	carol := mintUser(t, pub, signer, "carol", nil)

	refused(t, b, carol.option())
	if err := b.UpdateAccount(encode(t, claims, tt.operator)); err != nil {
		t.Fatalf("UpdateAccount with a new account: %v", err)
	}
	nc := connect(t, b, carol.option())
	roundTrip(t, nc)
	js := jetStream(t, nc)
	createStream(t, js, "NEW", jetstream.MemoryStorage)
}

func TestUpdateAccountRejectsUntrustedJWTs(t *testing.T) {
	tt := newTestTrust(t)
	b := startBroker(t, operatorConfig(tt))
	foreign := newTestTrust(t)
	sysWithJetStream := jwt.NewAccountClaims(tt.sysPub)
	sysWithJetStream.Limits.JetStreamLimits = jwt.JetStreamLimits{DiskStorage: -1, MemoryStorage: -1}
	expired := *tt.appClaims
	expired.Expires = time.Now().Add(-time.Hour).Unix()

	tests := []struct {
		name  string
		token string
	}{
		{"a string that is not a JWT", "not-a-jwt"},
		{"an account signed by another operator", foreign.appJWT},
		{"an account signed by an unknown operator key", encode(t, tt.appClaims, newKey(t, nkeys.CreateOperator))},
		{"an expired account", encode(t, &expired, tt.operatorSigner)},
		{"a system account that enables JetStream", encode(t, sysWithJetStream, tt.operator)},
		{"a user JWT instead of an account JWT", tt.user(t, "alice").jwt},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := b.UpdateAccount(tc.token); !errors.Is(err, ErrInvalidAccountJWT) {
				t.Errorf("UpdateAccount = %v, want ErrInvalidAccountJWT", err)
			}
		})
	}
	t.Run("the trusted account still works afterwards", func(t *testing.T) {
		roundTrip(t, connect(t, b, tt.user(t, "alice").option()))
	})
}

func TestUpdateAccountEnablesJetStreamLimitsAtOnce(t *testing.T) {
	tt := newTestTrust(t)
	limits := tt.appClaims.Limits.JetStreamLimits
	tt.appClaims.Limits.JetStreamLimits = jwt.JetStreamLimits{}
	tt.appJWT = encode(t, tt.appClaims, tt.operatorSigner)
	b := startBroker(t, operatorConfig(tt))
	nc := connect(t, b, tt.user(t, "alice").option())

	tt.appClaims.Limits.JetStreamLimits = limits
	if err := b.UpdateAccount(encode(t, tt.appClaims, tt.operatorSigner)); err != nil {
		t.Fatalf("UpdateAccount with JetStream limits: %v", err)
	}
	createStream(t, jetStream(t, nc), "LATE", jetstream.MemoryStorage)
}
