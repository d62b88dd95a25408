package provisioner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/jwt/v2"
)

// TestClusterTrustCarriesNoSecretAndRoundTrips: the file another node starts from names the
// operator and the system account, holds no seed, is 0600, and reads back as the same trust.
func TestClusterTrustCarriesNoSecretAndRoundTrips(t *testing.T) {
	s := openStore(t)
	ct, err := s.ClusterTrust()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cluster-trust.json")
	if err := WriteClusterTrust(path, ct); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]string
	if err := json.Unmarshal(data, &fields); err != nil || len(fields) != 2 {
		t.Fatalf("the trust file holds %d fields (%v), want the two JWTs only:\n%s", len(fields), err, data)
	}
	for name, token := range fields {
		if _, err := jwt.Decode(token); err != nil {
			t.Errorf("field %s is not a JWT: %v", name, err)
		}
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
		t.Errorf("trust file mode %v, want 0600", info.Mode().Perm())
	}
	back, err := ReadClusterTrust(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := back.Trust()
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.Trust()
	if err != nil {
		t.Fatal(err)
	}
	if got.OperatorJWT != want.OperatorJWT || got.SystemAccount != want.SystemAccount || len(got.Accounts) != 1 {
		t.Errorf("trust from the file %+v, want the store's operator and system account only", got)
	}
	if _, err := ReadClusterTrust(filepath.Join(t.TempDir(), "missing.json")); err == nil || !strings.Contains(err.Error(), "copy it") {
		t.Errorf("a missing trust file: %v, want an error that says where to copy it from", err)
	}
}

// TestSystemCredentialIsAnInProcessSystemUser: the broker's own system user is signed by the
// system account and refused over TCP.
func TestSystemCredentialIsAnInProcessSystemUser(t *testing.T) {
	s := openStore(t)
	c, err := s.SystemCredential()
	if err != nil {
		t.Fatal(err)
	}
	tr, err := s.Trust()
	if err != nil {
		t.Fatal(err)
	}
	uc := decodeUser(t, c.JWT)
	if uc.Issuer != tr.SystemAccount || uc.Expires != 0 {
		t.Errorf("system user issued by %s expiring %d, want the system account %s and no expiry", uc.Issuer, uc.Expires, tr.SystemAccount)
	}
	if !uc.AllowedConnectionTypes.Contains(jwt.ConnectionTypeInProcess) || len(uc.AllowedConnectionTypes) != 1 {
		t.Errorf("allowed connection types %v, want in-process only", uc.AllowedConnectionTypes)
	}
}
