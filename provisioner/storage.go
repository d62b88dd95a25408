package provisioner

import (
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
	"go.etcd.io/bbolt"

	"github.com/cotal-go/cotal/wire"
)

// Keys of a space bucket that hold its storage account (docs/accounts.md "Two accounts per
// space"; see wire/accounts.go). The space's agent account, which signs every credential handed
// out, keeps the original keys (keyAccountSeed, keySigningSeed, keyJWT), so the registry,
// revocations and mint work on it unchanged.
var (
	keyStorageSeed        = []byte("storage_account_seed")
	keyStorageSigningSeed = []byte("storage_signing_seed")
	keyStorageJWT         = []byte("storage_jwt")
)

// ResponseThreshold is how long the storage account keeps the route back to a request that
// came through the agent account's imports without any response flowing on it. The one
// export answers with a stream of responses (a pull request gets many messages), so a route
// ends only by this threshold. It must outlive the longest quiet pull a client keeps open: a
// nats.go or nats.js pull of the default 30 s expiry, whose heartbeats are further apart than
// that only when it has none. Each request with a reply (every JetStream publish) holds one
// route this long, a few hundred bytes, which is the memory the split costs under load.
const ResponseThreshold = 35 * time.Second

// storageKeys name the storage account's entries in a space bucket; agentKeys the agent
// account's.
var (
	storageKeys = accountKeys{seed: keyStorageSeed, signing: keyStorageSigningSeed, jwt: keyStorageJWT}
	agentKeys   = accountKeys{seed: keyAccountSeed, signing: keySigningSeed, jwt: keyJWT}
)

// accountKeys are the bucket keys of one account: identity seed, signing seed and JWT.
type accountKeys struct{ seed, signing, jwt []byte }

// newAccount creates an account's identity and signing keys, stores them under k and
// returns its claims, signing key listed and deny-all default permissions: a user JWT that
// carries no permissions inherits them, and every cotal profile carries its own, so the
// default only catches a foreign or malformed JWT.
func newAccount(b *bbolt.Bucket, k accountKeys, name string) (*jwt.AccountClaims, error) {
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
	if err := putSeed(b, k.seed, acct); err != nil {
		return nil, err
	}
	if err := putSeed(b, k.signing, signer); err != nil {
		return nil, err
	}
	claims := jwt.NewAccountClaims(acctPub)
	claims.Name = name
	claims.SigningKeys.Add(signerPub)
	claims.DefaultPermissions.Pub.Deny.Add(">")
	claims.DefaultPermissions.Sub.Deny.Add(">")
	return claims, nil
}

// newStorageAccount creates the space's storage account: JetStream, and one service export
// and one stream export of ">", through which the agent account imports what wire lists.
func (s *Store) newStorageAccount(tx *bbolt.Tx, b *bbolt.Bucket, space string) error {
	claims, err := newAccount(b, storageKeys, space+" storage")
	if err != nil {
		return err
	}
	s.applyStorageLimits(claims)
	claims.Exports = storageExports()
	_, err = storeClaims(tx, b, storageKeys, claims)
	return err
}

// newAgentAccount creates the space's agent account: no JetStream, Options.Limits, and the
// imports storeAccount writes from the registry.
func (s *Store) newAgentAccount(tx *bbolt.Tx, b *bbolt.Bucket, space string) error {
	claims, err := newAccount(b, agentKeys, space)
	if err != nil {
		return err
	}
	s.applyLimits(claims)
	_, err = storeAccount(tx, b, claims)
	return err
}

// storageExports are the storage account's two exports. Their import side is the agent
// account's, which lists exactly the subjects that cross.
func storageExports() jwt.Exports {
	return jwt.Exports{
		{Name: "storage services", Subject: ">", Type: jwt.Service,
			ResponseType: jwt.ResponseTypeStream, ResponseThreshold: ResponseThreshold},
		{Name: "storage deliveries", Subject: ">", Type: jwt.Stream},
	}
}

// applyStorageLimits gives the storage account the JetStream limits of Options.JetStream and
// refuses leaf connections; only the mesh's own in-process connections join it.
func (s *Store) applyStorageLimits(claims *jwt.AccountClaims) {
	claims.Limits.JetStreamLimits = s.opts.JetStream.jwt()
	claims.Limits.LeafNodeConn = 0
}

// agentImports are the agent account's imports from storage: wire's service subjects, and the
// inbox of every credential of the registry that can still connect and of every key waiting
// in the key pool.
func agentImports(b *bbolt.Bucket, space, storage string, now time.Time) (jwt.Imports, error) {
	var imports jwt.Imports
	for _, subj := range wire.NewNames(space).StorageServiceSubjects() {
		imports.Add(&jwt.Import{Name: subj, Subject: jwt.Subject(subj), Account: storage, Type: jwt.Service,
			Share: subj == wire.SharedServiceSubject})
	}
	var ids []string
	err := b.Bucket(bucketCredentials).ForEach(func(k, v []byte) error {
		rec, err := decodeRecord(string(k), v)
		if err != nil {
			return err
		}
		if rec.Active(now) {
			ids = append(ids, rec.ID)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	ids = append(ids, pooledIDs(b)...)
	sort.Strings(ids)
	for _, id := range ids {
		subj := wire.StorageStreamSubject(id)
		imports.Add(&jwt.Import{Name: id, Subject: jwt.Subject(subj), Account: storage, Type: jwt.Stream})
	}
	return imports, nil
}

// importsInbox reports whether the agent account's claims import id's inbox.
func importsInbox(acct *jwt.AccountClaims, id string) bool {
	subj := jwt.Subject(wire.StorageStreamSubject(id))
	for _, im := range acct.Imports {
		if im.Type == jwt.Stream && im.Subject == subj {
			return true
		}
	}
	return false
}

// storagePublicKey returns the public key of the space's storage account.
func storagePublicKey(b *bbolt.Bucket) (string, error) {
	claims, err := claimsOf(b, storageKeys)
	if err != nil {
		return "", err
	}
	return claims.Subject, nil
}
