package provisioner

import (
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/jwt/v2"
	"go.etcd.io/bbolt"

	"github.com/cotal-go/cotal/wire"
)

// Keys of a space bucket (spaces/<name>). The credential registry is a nested bucket.
var (
	keyAccountSeed    = []byte("account_seed")
	keySigningSeed    = []byte("signing_seed")
	bucketCredentials = []byte("credentials")
)

// Account is the public identity of one space's NATS accounts (SPEC §9: account = space).
// A space is two accounts (wire/accounts.go): the agent account every handed-out credential
// belongs to, described by PublicKey, SigningKey and JWT, and the storage account that holds
// its streams and cotal's own connections.
type Account struct {
	// Space is the space name the account was created for.
	Space string
	// PublicKey is the agent account's identity key, the account name the broker knows.
	PublicKey string
	// SigningKey is the public half of the separate key that signs the space's user JWTs; it
	// is listed in the agent account's claims.
	SigningKey string
	// JWT is the current agent account JWT, signed by the operator.
	JWT string
	// Storage is the storage account's identity key; StorageJWT its current JWT.
	Storage    string
	StorageJWT string
	// Retired lists the credentials this EnsureSpace call retired when it split a space
	// created before the storage account existed: they were minted in what is now the
	// storage account, are refused from now on, and must be minted again. Empty otherwise.
	Retired []Record
	// RetiredLeaves lists the leaf credentials this EnsureSpace call revoked because they were
	// minted for an older leaf link (docs/leaf.md); each leaf needs a new one. Empty otherwise.
	RetiredLeaves []Record
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
			t.Accounts[a.Storage] = a.StorageJWT
			return nil
		})
	})
	if err != nil {
		return Trust{}, err
	}
	return t, nil
}

// EnsureSpace returns the accounts of the space called name, creating them on first use: for
// each of the agent and storage accounts an account key, a separate signing key listed in its
// claims and deny-all default permissions, signed by the operator; the storage account gets
// the JetStream limits of Options.JetStream and the exports the agent account imports. An
// existing space keeps its keys; its JWTs are re-signed only when Options changed or when
// revocations whose JWTs have all expired are pruned. A space created before the split gets
// its agent account now (see splitSpace; Account.Retired lists what that retired). Registry
// rows of credentials that can no longer connect and that no revocation needs are deleted. A
// mesh calls it for every space at start, so the account JWTs it loads are bounded by the
// live credentials.
func (s *Store) EnsureSpace(name string) (Account, error) {
	if name == "" {
		return Account{}, fmt.Errorf("%w: the space name is empty", ErrInvalidRequest)
	}
	var a Account
	err := s.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketSpaces).Bucket([]byte(name))
		if b == nil {
			// A space made just now has the configured limits and nothing to prune.
			var err error
			if b, err = s.createSpace(tx, name); err != nil {
				return err
			}
			a, err = readAccount(b, name)
			return err
		}
		var err error
		var retired, leaves []Record
		if b.Get(keyStorageJWT) == nil {
			if retired, err = s.splitSpace(tx, b, name); err != nil {
				return err
			}
		}
		if leaves, err = retireLeafCredentials(tx, b); err != nil {
			return err
		}
		if err := s.refreshLimits(tx, b); err != nil {
			return err
		}
		if err := pruneSpace(tx, b, time.Now()); err != nil {
			return err
		}
		a, err = readAccount(b, name)
		a.Retired, a.RetiredLeaves = retired, leaves
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
	b, err := tx.Bucket(bucketSpaces).CreateBucket([]byte(name))
	if err != nil {
		return nil, err
	}
	if _, err := b.CreateBucket(bucketCredentials); err != nil {
		return nil, err
	}
	if err := s.newStorageAccount(tx, b, name); err != nil {
		return nil, err
	}
	// The key pool is filled before the agent account is first signed, so its imports
	// already hold the first firstPooledKeys inboxes: a new space's first mints re-sign
	// nothing, and the broker starts with the account it will keep.
	pool, err := b.CreateBucket(bucketKeyPool)
	if err != nil {
		return nil, err
	}
	if err := addPooledKeys(pool, firstPooledKeys); err != nil {
		return nil, err
	}
	if err := b.Put(keyLeafLinks, []byte{leafLinkVersion}); err != nil {
		return nil, err
	}
	return b, s.newAgentAccount(tx, b, name)
}

// refreshLimits re-signs either account when Options.JetStream or Options.Limits differ from
// its JWT, so a changed configuration reaches an existing space at the next start.
func (s *Store) refreshLimits(tx *bbolt.Tx, b *bbolt.Bucket) error {
	storage, err := claimsOf(b, storageKeys)
	if err != nil {
		return err
	}
	if s.changesLimits(storage, s.applyStorageLimits) {
		if _, err := storeClaims(tx, b, storageKeys, storage); err != nil {
			return err
		}
	}
	agents, err := accountClaims(b)
	if err != nil {
		return err
	}
	if !s.changesLimits(agents, s.applyLimits) && sharesRequester(agents) {
		return nil
	}
	_, err = storeAccount(tx, b, agents)
	return err
}

// sharesRequester reports whether the agent account's JetStream API import shares the
// requester's identity (wire.SharedServiceSubject); an account signed before it did is
// re-signed at start.
func sharesRequester(claims *jwt.AccountClaims) bool {
	for _, im := range claims.Imports {
		if string(im.Subject) == wire.SharedServiceSubject && im.Type == jwt.Service {
			return im.Share
		}
	}
	return false
}

// changesLimits applies apply to claims and reports whether their limits changed.
func (s *Store) changesLimits(claims *jwt.AccountClaims, apply func(*jwt.AccountClaims)) bool {
	before := claims.Limits
	apply(claims)
	return claims.Limits.JetStreamLimits != before.JetStreamLimits || claims.Limits.AccountLimits != before.AccountLimits
}

// applyLimits writes Options.Limits into the agent account's claims. It has no JetStream:
// its users reach the storage account's through imports.
func (s *Store) applyLimits(claims *jwt.AccountClaims) {
	claims.Limits.JetStreamLimits = jwt.JetStreamLimits{}
	claims.Limits.Conn = s.opts.Limits.Connections
	claims.Limits.LeafNodeConn = s.opts.Limits.LeafNodes
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
	a := Account{Space: name, PublicKey: claims.Subject, JWT: string(b.Get(keyJWT)),
		StorageJWT: string(b.Get(keyStorageJWT))}
	for k := range claims.SigningKeys {
		a.SigningKey = k
	}
	a.Storage, err = storagePublicKey(b)
	return a, err
}

// accountClaims decodes the space's stored agent account JWT.
func accountClaims(b *bbolt.Bucket) (*jwt.AccountClaims, error) { return claimsOf(b, agentKeys) }

// claimsOf decodes the stored JWT of the account k names.
func claimsOf(b *bbolt.Bucket, k accountKeys) (*jwt.AccountClaims, error) {
	claims, err := jwt.DecodeAccountClaims(string(b.Get(k.jwt)))
	if err != nil {
		return nil, fmt.Errorf("decode stored %s: %w", k.jwt, err)
	}
	return claims, nil
}

// storeAccount re-signs the agent account: its imports rewritten from the registry (one
// inbox per credential that can still connect), signed by the operator and stored as the
// space's current agent account JWT, which it returns.
func storeAccount(tx *bbolt.Tx, b *bbolt.Bucket, claims *jwt.AccountClaims) (string, error) {
	storage, err := storagePublicKey(b)
	if err != nil {
		return "", err
	}
	if claims.Imports, err = agentImports(b, claims.Name, storage, time.Now()); err != nil {
		return "", err
	}
	return storeClaims(tx, b, agentKeys, claims)
}

// storeClaims signs claims with the operator key and stores the JWT under k, returning it.
func storeClaims(tx *bbolt.Tx, b *bbolt.Bucket, k accountKeys, claims *jwt.AccountClaims) (string, error) {
	token, err := signAccount(tx, claims)
	if err != nil {
		return "", err
	}
	return token, b.Put(k.jwt, []byte(token))
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
