package provisioner

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/jwt/v2"
)

// TestClusterTrustCarriesNoSeedAndRoundTrips: the file another node starts from names the
// operator and the system account, holds no seed but the route secret, which stays the same
// from one call to the next, is 0600, and reads back as the same trust.
func TestClusterTrustCarriesNoSeedAndRoundTrips(t *testing.T) {
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
	if err := json.Unmarshal(data, &fields); err != nil || len(fields) != 5 {
		t.Fatalf("the trust file holds %d fields (%v), want the two JWTs and the route secret, certificate and key:\n%s", len(fields), err, data)
	}
	if _, err := tls.X509KeyPair([]byte(fields["routeCert"]), []byte(fields["routeKey"])); err != nil {
		t.Errorf("the route certificate and key do not pair: %v", err)
	}
	for _, name := range []string{"operatorJwt", "systemAccountJwt"} {
		if _, err := jwt.Decode(fields[name]); err != nil {
			t.Errorf("field %s is not a JWT: %v", name, err)
		}
	}
	if len(fields["routeSecret"]) < 26 {
		t.Errorf("route secret %q, want 128 random bits at least", fields["routeSecret"])
	}
	again, err := s.ClusterTrust()
	if err != nil || again != ct {
		t.Errorf("a second ClusterTrust gave %+v (%v), want the first route secret and certificate kept", again, err)
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

// TestATrustFileWithoutARouteSecretIsRefused: a file written before routes were
// authenticated would start a node that no other node lets in; reading it says what to do.
func TestATrustFileWithoutARouteSecretIsRefused(t *testing.T) {
	ct, err := openStore(t).ClusterTrust()
	if err != nil {
		t.Fatal(err)
	}
	ct.RouteSecret = ""
	path := filepath.Join(t.TempDir(), "cluster-trust.json")
	if err := WriteClusterTrust(path, ct); err != nil {
		t.Fatal(err)
	}
	_, err = ReadClusterTrust(path)
	if !errors.Is(err, ErrNoRouteSecret) || !strings.Contains(err.Error(), "copy it here again") {
		t.Errorf("an old trust file: %v, want ErrNoRouteSecret saying to copy a new one", err)
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

// TestATrustFileIsNeverReadHalfWritten: nodes started together read the key-store node's
// trust file as soon as it exists, and a restart of that node writes it again. A reader
// must see the whole file every time, never one truncated or half written.
func TestATrustFileIsNeverReadHalfWritten(t *testing.T) {
	ct, err := openStore(t).ClusterTrust()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cluster-trust.json")
	if err := WriteClusterTrust(path, ct); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for range 200 {
			if err := WriteClusterTrust(path, ct); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for reads := 0; ; reads++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d reads while the file was written 200 times", reads)
			return
		default:
		}
		if _, err := ReadClusterTrust(path); err != nil {
			t.Fatalf("read %d while the file was written again: %v", reads, err)
		}
	}
}
