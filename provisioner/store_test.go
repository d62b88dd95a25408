package provisioner

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
)

func TestOpenCreatesTheTrustRoot(t *testing.T) {
	s := openStore(t)
	tr, err := s.Trust()
	if err != nil {
		t.Fatal(err)
	}
	op, err := jwt.DecodeOperatorClaims(tr.OperatorJWT)
	if err != nil {
		t.Fatal(err)
	}
	if op.Issuer != op.Subject {
		t.Errorf("operator JWT issued by %s, want self-signed", op.Issuer)
	}
	if op.SystemAccount != tr.SystemAccount {
		t.Errorf("operator names system account %s, Trust says %s", op.SystemAccount, tr.SystemAccount)
	}
	alpha, err := s.Space("alpha")
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Accounts) != 3 || tr.Accounts[alpha.PublicKey] != alpha.JWT || tr.Accounts[alpha.Storage] != alpha.StorageJWT ||
		tr.Accounts[tr.SystemAccount] == "" {
		t.Fatalf("Trust.Accounts has %d entries, want the system account and alpha's agent and storage accounts", len(tr.Accounts))
	}
	if names, err := s.Spaces(); err != nil || !reflect.DeepEqual(names, []string{"alpha"}) {
		t.Errorf("Spaces() = %v, %v; want [alpha]", names, err)
	}
	for pub, token := range tr.Accounts {
		ac := decodeAccount(t, token)
		if ac.Subject != pub || ac.Issuer != op.Subject {
			t.Errorf("account %s: subject %s issuer %s, want itself signed by the operator", pub, ac.Subject, ac.Issuer)
		}
	}
}

func TestEnsureSpaceCreatesAScopedAccount(t *testing.T) {
	s := openStore(t)
	a, err := s.Space("alpha")
	if err != nil {
		t.Fatal(err)
	}
	ac := decodeAccount(t, a.JWT)
	t.Run("a separate signing key is listed in the claims", func(t *testing.T) {
		if a.SigningKey == "" || a.SigningKey == a.PublicKey || !ac.SigningKeys.Contains(a.SigningKey) {
			t.Errorf("signing key %q, claims list %v", a.SigningKey, ac.SigningKeys.Keys())
		}
	})
	t.Run("JetStream limits are explicit on storage, absent on the agent account", func(t *testing.T) {
		want := DefaultOptions().JetStream.jwt()
		if got := decodeAccount(t, a.StorageJWT).Limits.JetStreamLimits; got != want {
			t.Errorf("storage limits %+v, want %+v", got, want)
		}
		if ac.Limits.IsJSEnabled() {
			t.Errorf("the agent account enables JetStream: %+v", ac.Limits.JetStreamLimits)
		}
	})
	t.Run("default permissions deny everything", func(t *testing.T) {
		dp := ac.DefaultPermissions
		if !reflect.DeepEqual(dp.Pub.Deny, jwt.StringList{">"}) || !reflect.DeepEqual(dp.Sub.Deny, jwt.StringList{">"}) {
			t.Errorf("default permissions %+v", dp)
		}
	})
	t.Run("a second call returns the same account", func(t *testing.T) {
		again, err := s.EnsureSpace("alpha")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(again, a) {
			t.Errorf("EnsureSpace changed the account: %+v, was %+v", again, a)
		}
	})
	t.Run("an unknown space is refused", func(t *testing.T) {
		if _, err := s.Space("beta"); !errors.Is(err, ErrUnknownSpace) {
			t.Errorf("Space(beta) = %v, want ErrUnknownSpace", err)
		}
	})
}

func TestRestartKeepsEveryKeyAndRecord(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnsureSpace("alpha"); err != nil {
		t.Fatal(err)
	}
	c := mint(t, s, MintRequest{})
	before, err := s.Trust()
	if err != nil {
		t.Fatal(err)
	}
	alpha, _ := s.Space("alpha")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	after, err := s.Trust()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, after) {
		t.Errorf("Trust changed across restart:\nbefore %+v\nafter  %+v", before, after)
	}
	if again, _ := s.EnsureSpace("alpha"); !reflect.DeepEqual(again, alpha) {
		t.Errorf("space account changed across restart: %+v, was %+v", again, alpha)
	}
	if _, err := s.Record("alpha", c.ID); err != nil {
		t.Errorf("credential record lost across restart: %v", err)
	}
}

func TestReopenWithNewLimitsResignsTheAccount(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	before, _ := s.EnsureSpace("alpha")
	s.Close()

	opts := DefaultOptions()
	opts.JetStream.DiskStorage = 1 << 30
	s, err = Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	after, err := s.EnsureSpace("alpha")
	if err != nil {
		t.Fatal(err)
	}
	if after.PublicKey != before.PublicKey || after.SigningKey != before.SigningKey {
		t.Errorf("keys changed: %+v, was %+v", after, before)
	}
	if got := decodeAccount(t, after.StorageJWT).Limits.DiskStorage; got != 1<<30 {
		t.Errorf("disk limit %d, want %d", got, 1<<30)
	}
}

// A changed connection limit reaches an existing space's account at the next open, and a
// space refuses leaf node connections unless the mesh runs leaf links.
func TestReopenWithNewConnectionLimitResignsTheAccount(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnsureSpace("alpha"); err != nil {
		t.Fatal(err)
	}
	s.Close()

	opts := DefaultOptions()
	opts.Limits.Connections = 50
	s, err = Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	after, err := s.EnsureSpace("alpha")
	if err != nil {
		t.Fatal(err)
	}
	l := decodeAccount(t, after.JWT).Limits
	if l.Conn != 50 || l.LeafNodeConn != 0 {
		t.Errorf("account limits conn %d, leaf %d; want 50, 0", l.Conn, l.LeafNodeConn)
	}
	s.Close()

	opts.Limits.LeafNodes = 7
	linked, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer linked.Close()
	if after, err = linked.EnsureSpace("alpha"); err != nil {
		t.Fatal(err)
	}
	if l := decodeAccount(t, after.JWT).Limits; l.LeafNodeConn != 7 {
		t.Errorf("account limits leaf %d once leaf links are on; want 7", l.LeafNodeConn)
	}
}

func TestKeyStoreFileModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, KeysFile): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s has mode %o, want %o", path, got, want)
		}
	}
}

func TestOpenNarrowsAWiderKeyStoreMode(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	path := filepath.Join(dir, KeysFile)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("keys.db has mode %o after reopen, want 600", fi.Mode().Perm())
	}
}

func TestSecondOpenOfADirectoryInUseFailsWithErrLocked(t *testing.T) {
	s := openStore(t)
	opts := DefaultOptions()
	opts.LockTimeout = 50 * time.Millisecond
	second, err := Open(s.Dir(), opts)
	if err == nil {
		second.Close()
		t.Fatal("second Open succeeded while the store is open")
	}
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), s.Dir()) || !strings.Contains(err.Error(), "cotal up") {
		t.Errorf("error %q should name the directory and suggest `cotal up`", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Options)
		ok     bool
	}{
		{"the defaults are valid", func(*Options) {}, true},
		{"a zero lock timeout is refused", func(o *Options) { o.LockTimeout = 0 }, false},
		{"a zero credential TTL is refused", func(o *Options) { o.CredentialTTL = 0 }, false},
		{"a limit below -1 is refused", func(o *Options) { o.JetStream.Streams = -2 }, false},
		{"disabling both storage types is refused", func(o *Options) { o.JetStream.MemoryStorage, o.JetStream.DiskStorage = 0, 0 }, false},
		{"memory-only storage is valid", func(o *Options) { o.JetStream.DiskStorage = 0 }, true},
		{"zero consumers is refused", func(o *Options) { o.JetStream.Consumers = 0 }, false},
		{"zero connections is refused", func(o *Options) { o.Limits.Connections = 0 }, false},
		{"a subscription limit below -1 is refused", func(o *Options) { o.Limits.Subscriptions = -2 }, false},
		{"a positive payload limit is valid", func(o *Options) { o.Limits.Payload = 1 << 20 }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := DefaultOptions()
			tt.change(&o)
			err := o.Validate()
			if (err == nil) != tt.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("error %v is not ErrInvalidOptions", err)
			}
		})
	}
}

func TestOpenRefusesInvalidOptions(t *testing.T) {
	if _, err := Open(t.TempDir(), Options{}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("Open with zero Options = %v, want ErrInvalidOptions", err)
	}
}

// TestOnlyATemporaryStoreSkipsFsync pins which stores may skip fsync: a persistent store
// keeps one fsync per commit (an acknowledged mint or revocation is on disk), and a temporary
// one, deleted by its owner, skips it; both keep the lock timeout.
func TestOnlyATemporaryStoreSkipsFsync(t *testing.T) {
	cases := []struct {
		name      string
		temporary bool
	}{
		{"a persistent store syncs every commit", false},
		{"a temporary store syncs nothing", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := DefaultOptions()
			o.Temporary = c.temporary
			b := o.boltOptions()
			if b.NoSync != c.temporary || b.NoGrowSync != c.temporary || b.NoFreelistSync != c.temporary {
				t.Fatalf("bolt options NoSync=%v NoGrowSync=%v NoFreelistSync=%v; want all %v",
					b.NoSync, b.NoGrowSync, b.NoFreelistSync, c.temporary)
			}
			if b.Timeout != o.LockTimeout {
				t.Fatalf("lock timeout %v; want %v", b.Timeout, o.LockTimeout)
			}
			s, err := Open(t.TempDir(), o)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.db.NoSync != c.temporary {
				t.Fatalf("open store NoSync = %v; want %v", s.db.NoSync, c.temporary)
			}
			if _, err := s.EnsureSpace("main"); err != nil {
				t.Fatalf("a store with Temporary=%v cannot create a space: %v", c.temporary, err)
			}
		})
	}
}
