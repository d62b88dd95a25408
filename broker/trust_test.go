package broker

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// testTrust is a decentralized-auth chain made fresh for one test, shaped like the one the
// provisioner keeps: an operator with a signing key, a system account signed by the operator's
// identity key, and one application account signed by the operator's signing key whose users
// are signed by a separate account signing key.
type testTrust struct {
	operator       nkeys.KeyPair
	operatorSigner nkeys.KeyPair
	operatorJWT    string
	sysPub, sysJWT string
	appPub         string
	appSigner      nkeys.KeyPair
	appClaims      *jwt.AccountClaims
	appJWT         string
}

func newTestTrust(t testing.TB) *testTrust {
	t.Helper()
	tt := &testTrust{operator: newKey(t, nkeys.CreateOperator), operatorSigner: newKey(t, nkeys.CreateOperator)}
	sys := newKey(t, nkeys.CreateAccount)
	tt.sysPub = publicKey(t, sys)
	oc := jwt.NewOperatorClaims(publicKey(t, tt.operator))
	oc.Name = "test-operator"
	oc.SystemAccount = tt.sysPub
	oc.SigningKeys.Add(publicKey(t, tt.operatorSigner))
	tt.operatorJWT = encode(t, oc, tt.operator)

	sc := jwt.NewAccountClaims(tt.sysPub)
	sc.Name = "SYS"
	tt.sysJWT = encode(t, sc, tt.operator)

	tt.appPub, tt.appSigner, tt.appClaims = newAppAccount(t)
	tt.appJWT = encode(t, tt.appClaims, tt.operatorSigner)
	return tt
}

// newAppAccount returns an application account with a separate user signing key and
// JetStream enabled. The limits are what make JetStream work: an account JWT without
// JetStreamLimits has no JetStream at all.
func newAppAccount(t testing.TB) (string, nkeys.KeyPair, *jwt.AccountClaims) {
	t.Helper()
	pub := publicKey(t, newKey(t, nkeys.CreateAccount))
	signer := newKey(t, nkeys.CreateAccount)
	ac := jwt.NewAccountClaims(pub)
	ac.Name = "app"
	ac.SigningKeys.Add(publicKey(t, signer))
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
	return pub, signer, ac
}

// accounts is the Config.Accounts map: the system account and the application account.
func (tt *testTrust) accounts() map[string]string {
	return map[string]string{tt.sysPub: tt.sysJWT, tt.appPub: tt.appJWT}
}

// testUser is one credential: the user's public key, its JWT and its seed.
type testUser struct {
	pub, jwt string
	seed     []byte
}

func (u testUser) option() nats.Option { return nats.UserJWTAndSeed(u.jwt, string(u.seed)) }

// user mints a user of the application account, signed by the account signing key.
func (tt *testTrust) user(t testing.TB, name string) testUser {
	t.Helper()
	return mintUser(t, tt.appPub, tt.appSigner, name, nil)
}

// mintUser signs a user of account with signer; edit, if set, changes the claims first.
func mintUser(t testing.TB, account string, signer nkeys.KeyPair, name string, edit func(*jwt.UserClaims)) testUser {
	t.Helper()
	kp := newKey(t, nkeys.CreateUser)
	seed, err := kp.Seed()
	if err != nil {
		t.Fatalf("user seed: %v", err)
	}
	uc := jwt.NewUserClaims(publicKey(t, kp))
	uc.Name = name
	uc.IssuerAccount = account
	if edit != nil {
		edit(uc)
	}
	return testUser{pub: uc.Subject, jwt: encode(t, uc, signer), seed: seed}
}

// revoke re-signs the application account JWT with user revoked as of now.
func (tt *testTrust) revoke(t testing.TB, user testUser) string {
	t.Helper()
	tt.appClaims.Revoke(user.pub)
	tt.appJWT = encode(t, tt.appClaims, tt.operatorSigner)
	return tt.appJWT
}

func newKey(t testing.TB, create func() (nkeys.KeyPair, error)) nkeys.KeyPair {
	t.Helper()
	kp, err := create()
	if err != nil {
		t.Fatalf("create nkey: %v", err)
	}
	return kp
}

func publicKey(t testing.TB, kp nkeys.KeyPair) string {
	t.Helper()
	pub, err := kp.PublicKey()
	if err != nil {
		t.Fatalf("public key: %v", err)
	}
	return pub
}

func encode(t testing.TB, c jwt.Claims, kp nkeys.KeyPair) string {
	t.Helper()
	token, err := c.Encode(kp)
	if err != nil {
		t.Fatalf("encode %T: %v", c, err)
	}
	return token
}

// operatorConfig is a memory mesh without a listener trusting tt, with a quiet logger.
func operatorConfig(tt *testTrust) Config {
	cfg := DefaultConfig()
	cfg.Memory = true
	cfg.OperatorJWT = tt.operatorJWT
	cfg.SystemAccount = tt.sysPub
	cfg.Accounts = tt.accounts()
	cfg.Logger = slog.New(slog.DiscardHandler)
	return cfg
}

// startBroker starts a broker that the test's cleanup shuts down.
func startBroker(t testing.TB, cfg Config) *Broker {
	t.Helper()
	b, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { shutdown(t, b) })
	return b
}

func shutdown(t testing.TB, b *Broker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// connect opens an in-process connection closed by the test's cleanup.
func connect(t testing.TB, b *Broker, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect("", append([]nats.Option{nats.InProcessServer(b.InProcess())}, opts...)...)
	if err != nil {
		t.Fatalf("in-process connect: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// refused asserts that b refuses a connection made with opt as an authorization violation.
func refused(t testing.TB, b *Broker, opt nats.Option) {
	t.Helper()
	nc, err := nats.Connect("", nats.InProcessServer(b.InProcess()), nats.NoReconnect(), opt)
	if err == nil {
		nc.Close()
		t.Fatal("connect succeeded, want an authorization violation")
	}
	if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("connect error = %v, want an authorization violation", err)
	}
}

// roundTrip proves nc can subscribe and publish in its account.
func roundTrip(t testing.TB, nc *nats.Conn) {
	t.Helper()
	sub, err := nc.SubscribeSync("probe." + nats.NewInbox())
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	defer sub.Unsubscribe()
	if err := nc.Publish(sub.Subject, []byte("ping")); err != nil {
		t.Fatalf("publish: %v", err)
	}
	msg, err := sub.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatalf("receive own publish: %v", err)
	}
	if string(msg.Data) != "ping" {
		t.Fatalf("received %q, want %q", msg.Data, "ping")
	}
}

// errNotYet is a polled condition's "keep waiting" answer.
var errNotYet = errors.New("not yet")
