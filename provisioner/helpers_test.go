package provisioner

import (
	"path/filepath"
	"testing"

	"github.com/nats-io/jwt/v2"
)

// testID is a fixed user public key, so permission subjects are reproducible.
const testID = "UDTK2MEYYY33WROIB3F52XDRY3UOQ2FVWDPANSEP4ZM3VXTTO4XW6LZO"

// openStore opens a store in a fresh data directory with one space, "alpha", and closes it
// when the test ends.
func openStore(t testing.TB) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "data"), DefaultOptions())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.EnsureSpace("alpha"); err != nil {
		t.Fatalf("EnsureSpace: %v", err)
	}
	return s
}

// mint mints req in space alpha or fails the test.
func mint(t *testing.T, s *Store, req MintRequest) *Credential {
	t.Helper()
	if req.Space == "" {
		req.Space = "alpha"
	}
	if req.Name == "" {
		req.Name = "ada"
	}
	if req.Profile == "" {
		req.Profile = ProfileAgent
	}
	c, err := s.Mint(req)
	if err != nil {
		t.Fatalf("Mint: %v", err)
	}
	return c
}

// spaceClaims decodes the current account JWT of space alpha.
func spaceClaims(t *testing.T, s *Store) *jwt.AccountClaims {
	t.Helper()
	a, err := s.Space("alpha")
	if err != nil {
		t.Fatalf("Space: %v", err)
	}
	return decodeAccount(t, a.JWT)
}

func decodeAccount(t *testing.T, token string) *jwt.AccountClaims {
	t.Helper()
	ac, err := jwt.DecodeAccountClaims(token)
	if err != nil {
		t.Fatalf("DecodeAccountClaims: %v", err)
	}
	return ac
}

func decodeUser(t *testing.T, token string) *jwt.UserClaims {
	t.Helper()
	uc, err := jwt.DecodeUserClaims(token)
	if err != nil {
		t.Fatalf("DecodeUserClaims: %v", err)
	}
	return uc
}
