package provisioner

import (
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
	"go.etcd.io/bbolt"
)

// Keys of a space bucket (spaces/<name>). The credential registry is a nested bucket.
var (
	keyAccountSeed    = []byte("account_seed")
	keySigningSeed    = []byte("signing_seed")
	bucketCredentials = []byte("credentials")
)

// Account is the public identity of one space's NATS account (SPEC §9: account = space).
type Account struct {
	// Space is the space name the account was created for.
	Space string
	// PublicKey is the account's identity key, the account name the broker knows.
	PublicKey string
	// SigningKey is the public half of the separate key that signs the space's user JWTs; it
	// is listed in the account claims' signing keys.
	SigningKey string
	// JWT is the current account JWT, signed by the operator.
	JWT string
}

// Trust is everything the broker needs to run in operator mode: the operator JWT, the
// system account and every account JWT to preload into its resolver.
type Trust struct {
	// OperatorJWT is the self-signed operator JWT; it names SystemAccount.
	OperatorJWT string
	// SystemAccount is the public key of the system account.
	SystemAccount string
	// Accounts maps each account public key (the system account's and every space's) to its
	// current JWT.
	Accounts map[string]string
}

// Trust returns the operator, the system account and every account created so far.
func (s *Store) Trust() (Trust, error) {
	t := Trust{Accounts: map[string]string{}}
	err := s.db.View(func(tx *bbolt.Tx) error {
		t.OperatorJWT = string(tx.Bucket(bucketOperator).Get(keyJWT))
		sysJWT := string(tx.Bucket(bucketSystem).Get(keyJWT))
		sys, err := jwt.DecodeAccountClaims(sysJWT)
		if err != nil {
			return fmt.Errorf("decode system account JWT: %w", err)
		}
		t.SystemAccount = sys.Subject
		t.Accounts[sys.Subject] = sysJWT
		return tx.Bucket(bucketSpaces).ForEachBucket(func(name []byte) error {
			a, err := readAccount(tx.Bucket(bucketSpaces).Bucket(name), string(name))
			if err != nil {
				return err
			}
			t.Accounts[a.PublicKey] = a.JWT
			return nil
		})
	})
	if err != nil {
		return Trust{}, err
	}
	return t, nil
}

// EnsureSpace returns the account of the space called name, creating it on first use: an
// account key, a separate signing key listed in the account claims, the JetStream limits of
// Options.JetStream and deny-all default permissions, signed by the operator. An existing
// account keeps its keys; its JWT is re-signed only when Options.JetStream changed or when
// revocations whose JWTs have all expired are pruned from it. Registry rows of credentials
// that can no longer connect and that no revocation needs are deleted. A mesh calls it for
// every space at start, so the account JWT it loads is bounded by the live credentials.
func (s *Store) EnsureSpace(name string) (Account, error) {
	if name == "" {
		return Account{}, fmt.Errorf("%w: the space name is empty", ErrInvalidRequest)
	}
	var a Account
	err := s.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketSpaces).Bucket([]byte(name))
		var err error
		if b == nil {
			b, err = s.createSpace(tx, name)
		} else if err = s.refreshLimits(tx, b); err == nil {
			err = pruneSpace(tx, b, time.Now())
		}
		if err != nil {
			return err
		}
		a, err = readAccount(b, name)
		return err
	})
	if err != nil {
		return Account{}, fmt.Errorf("ensure space %q: %w", name, err)
	}
	return a, nil
}

// Space returns the account of an existing space, or ErrUnknownSpace.
func (s *Store) Space(name string) (Account, error) {
	var a Account
	err := s.db.View(func(tx *bbolt.Tx) error {
		b, err := spaceBucket(tx, name)
		if err != nil {
			return err
		}
		a, err = readAccount(b, name)
		return err
	})
	return a, err
}

// Spaces returns the names of every space created so far, sorted.
func (s *Store) Spaces() ([]string, error) {
	var names []string
	err := s.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketSpaces).ForEachBucket(func(name []byte) error {
			names = append(names, string(name))
			return nil
		})
	})
	sort.Strings(names)
	return names, err
}

func (s *Store) createSpace(tx *bbolt.Tx, name string) (*bbolt.Bucket, error) {
	acct, err := nkeys.CreateAccount()
	if err != nil {
		return nil, fmt.Errorf("create account key: %w", err)
	}
	defer acct.Wipe()
	signer, err := nkeys.CreateAccount()
	if err != nil {
		return nil, fmt.Errorf("create account signing key: %w", err)
	}
	defer signer.Wipe()
	acctPub, _ := acct.PublicKey()
	signerPub, _ := signer.PublicKey()

	claims := jwt.NewAccountClaims(acctPub)
	claims.Name = name
	claims.SigningKeys.Add(signerPub)
	s.applyLimits(claims)
	// A user JWT that carries no permissions inherits the account defaults; every cotal
	// profile carries its own, so the default only catches a foreign or malformed JWT.
	claims.DefaultPermissions.Pub.Deny.Add(">")
	claims.DefaultPermissions.Sub.Deny.Add(">")
	token, err := signAccount(tx, claims)
	if err != nil {
		return nil, err
	}

	b, err := tx.Bucket(bucketSpaces).CreateBucket([]byte(name))
	if err != nil {
		return nil, err
	}
	if err := putSeed(b, keyAccountSeed, acct); err != nil {
		return nil, err
	}
	if err := putSeed(b, keySigningSeed, signer); err != nil {
		return nil, err
	}
	if err := b.Put(keyJWT, []byte(token)); err != nil {
		return nil, err
	}
	_, err = b.CreateBucket(bucketCredentials)
	return b, err
}

// refreshLimits re-signs the account when Options.JetStream or Options.Limits differ from
// its JWT, so a changed configuration reaches an existing space at the next start.
func (s *Store) refreshLimits(tx *bbolt.Tx, b *bbolt.Bucket) error {
	claims, err := accountClaims(b)
	if err != nil {
		return err
	}
	before := claims.Limits
	s.applyLimits(claims)
	if claims.Limits.JetStreamLimits == before.JetStreamLimits && claims.Limits.AccountLimits == before.AccountLimits {
		return nil
	}
	_, err = storeAccount(tx, b, claims)
	return err
}

// applyLimits writes Options.JetStream and Options.Limits into an account's claims.
func (s *Store) applyLimits(claims *jwt.AccountClaims) {
	claims.Limits.JetStreamLimits = s.opts.JetStream.jwt()
	claims.Limits.Conn = s.opts.Limits.Connections
	// A mesh runs no leaf node listener; refusing leaf connections keeps it so.
	claims.Limits.LeafNodeConn = 0
}

// spaceBucket returns the bucket of an existing space.
func spaceBucket(tx *bbolt.Tx, name string) (*bbolt.Bucket, error) {
	b := tx.Bucket(bucketSpaces).Bucket([]byte(name))
	if b == nil {
		return nil, fmt.Errorf("%w %q: create it first (EnsureSpace)", ErrUnknownSpace, name)
	}
	return b, nil
}

func readAccount(b *bbolt.Bucket, name string) (Account, error) {
	claims, err := accountClaims(b)
	if err != nil {
		return Account{}, err
	}
	a := Account{Space: name, PublicKey: claims.Subject, JWT: string(b.Get(keyJWT))}
	for k := range claims.SigningKeys {
		a.SigningKey = k
	}
	return a, nil
}

// accountClaims decodes the space's stored account JWT.
func accountClaims(b *bbolt.Bucket) (*jwt.AccountClaims, error) {
	claims, err := jwt.DecodeAccountClaims(string(b.Get(keyJWT)))
	if err != nil {
		return nil, fmt.Errorf("decode stored account JWT: %w", err)
	}
	return claims, nil
}

// storeAccount signs claims with the operator key and stores the JWT as the space's current
// account JWT, returning it.
func storeAccount(tx *bbolt.Tx, b *bbolt.Bucket, claims *jwt.AccountClaims) (string, error) {
	token, err := signAccount(tx, claims)
	if err != nil {
		return "", err
	}
	return token, b.Put(keyJWT, []byte(token))
}

func signAccount(tx *bbolt.Tx, claims *jwt.AccountClaims) (string, error) {
	op, err := operatorKey(tx)
	if err != nil {
		return "", err
	}
	defer op.Wipe()
	token, err := claims.Encode(op)
	if err != nil {
		return "", fmt.Errorf("sign account %s: %w", claims.Name, err)
	}
	return token, nil
}
