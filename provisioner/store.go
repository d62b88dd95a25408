package provisioner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// KeysFile is the name of the key store inside the data directory.
const KeysFile = "keys.db"

// Bucket and key names inside keys.db. The operator and system buckets hold one identity
// each; the spaces bucket holds one nested bucket per space name (see account.go).
var (
	bucketOperator = []byte("operator")
	bucketSystem   = []byte("system")
	bucketSpaces   = []byte("spaces")

	keySeed = []byte("seed")
	keyJWT  = []byte("jwt")
)

// Store is the trust root of one data directory: the operator, the system account, one
// account per space and the registry of every minted credential, kept in keys.db. A Store
// holds bbolt's exclusive file lock until Close, so exactly one process serves a data
// directory. Its methods are safe for concurrent use.
type Store struct {
	db   *bbolt.DB
	dir  string
	opts Options
	// opened is when Open returned: an in-process-only credential written before it belongs
	// to an earlier run (forgettable).
	opened time.Time
}

// Open opens or creates the key store in dir. The directory is created with mode 0700 and
// keys.db with mode 0600; on first open it creates the operator and the system account.
// If another process holds the store, Open fails with ErrLocked after opts.LockTimeout.
func Open(dir string, opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, KeysFile)
	db, err := bbolt.Open(path, 0o600, opts.boltOptions())
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("%w: the data directory %s is in use by another cotal process (is `cotal up` running?)", ErrLocked, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("open key store %s: %w", path, err)
	}
	// bbolt applies the mode only when it creates the file; a copied-in store is narrowed too.
	if err := os.Chmod(path, 0o600); err != nil {
		db.Close()
		return nil, fmt.Errorf("restrict key store %s to mode 0600: %w", path, err)
	}
	s := &Store{db: db, dir: dir, opts: opts, opened: time.Now()}
	if err := db.Update(ensureRoot); err != nil {
		db.Close()
		return nil, fmt.Errorf("initialize key store %s: %w", path, err)
	}
	return s, nil
}

// boltOptions are bbolt's options for the store: a temporary store skips every fsync
// (Options.Temporary), a persistent one keeps bbolt's defaults, one fsync per commit.
func (o Options) boltOptions() *bbolt.Options {
	return &bbolt.Options{Timeout: o.LockTimeout, NoSync: o.Temporary, NoGrowSync: o.Temporary,
		NoFreelistSync: o.Temporary}
}

// Close releases the key store and its file lock.
func (s *Store) Close() error { return s.db.Close() }

// Dir is the data directory the store was opened in.
func (s *Store) Dir() string { return s.dir }

// ensureRoot creates the operator and system account on first open. The system account is
// created first because the operator JWT names it (SystemAccount) and the operator signs it.
func ensureRoot(tx *bbolt.Tx) error {
	if tx.Bucket(bucketOperator) != nil {
		return nil
	}
	op, err := nkeys.CreateOperator()
	if err != nil {
		return fmt.Errorf("create operator key: %w", err)
	}
	defer op.Wipe()
	sys, err := nkeys.CreateAccount()
	if err != nil {
		return fmt.Errorf("create system account key: %w", err)
	}
	defer sys.Wipe()
	sysPub, _ := sys.PublicKey()
	sysClaims := jwt.NewAccountClaims(sysPub)
	sysClaims.Name = "SYS"
	sysJWT, err := sysClaims.Encode(op)
	if err != nil {
		return fmt.Errorf("sign system account: %w", err)
	}
	opPub, _ := op.PublicKey()
	opClaims := jwt.NewOperatorClaims(opPub)
	opClaims.Name = "cotal"
	opClaims.SystemAccount = sysPub
	opJWT, err := opClaims.Encode(op)
	if err != nil {
		return fmt.Errorf("sign operator: %w", err)
	}
	if err := putIdentity(tx, bucketSystem, sys, sysJWT); err != nil {
		return err
	}
	if err := putIdentity(tx, bucketOperator, op, opJWT); err != nil {
		return err
	}
	_, err = tx.CreateBucket(bucketSpaces)
	return err
}

// putIdentity stores a key's seed and JWT in a new top-level bucket.
func putIdentity(tx *bbolt.Tx, name []byte, kp nkeys.KeyPair, token string) error {
	b, err := tx.CreateBucket(name)
	if err != nil {
		return err
	}
	if err := putSeed(b, keySeed, kp); err != nil {
		return err
	}
	return b.Put(keyJWT, []byte(token))
}

// putSeed stores a copy of kp's seed: bbolt keeps the value slice until the transaction
// commits, and the caller wipes kp before that.
func putSeed(b *bbolt.Bucket, key []byte, kp nkeys.KeyPair) error {
	seed, err := kp.Seed()
	if err != nil {
		return err
	}
	return b.Put(key, append([]byte(nil), seed...))
}

// loadKey decodes the seed stored under key. The caller wipes the key pair when done.
func loadKey(b *bbolt.Bucket, key []byte) (nkeys.KeyPair, error) {
	seed := b.Get(key)
	if seed == nil {
		return nil, fmt.Errorf("key store is missing %s: the file is damaged; restore it from a backup", key)
	}
	kp, err := nkeys.FromSeed(seed)
	if err != nil {
		// The seed itself never reaches the message.
		return nil, fmt.Errorf("key store holds an undecodable %s: the file is damaged; restore it from a backup", key)
	}
	return kp, nil
}

// operatorKey loads the operator signing key.
func operatorKey(tx *bbolt.Tx) (nkeys.KeyPair, error) {
	return loadKey(tx.Bucket(bucketOperator), keySeed)
}
