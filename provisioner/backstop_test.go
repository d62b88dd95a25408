package provisioner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/jwt/v2"
)

// TestTheClusterBackstopFileKeepsOneDeliveryIdentity: the file is written 0600 with a delivery
// credential of the space's storage account, in process only; a second call keeps it, so
// every node keeps one identity; a file from another store is replaced.
func TestTheClusterBackstopFileKeepsOneDeliveryIdentity(t *testing.T) {
	s := openStore(t)
	path := filepath.Join(t.TempDir(), "cluster-backstop.json")
	first, err := s.ClusterBackstop(path, []string{"alpha"})
	if err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the file: %v %v, want mode 0600", info, err)
	}
	c := first.Spaces["alpha"]
	uc, err := jwt.DecodeUserClaims(c.JWT)
	if err != nil {
		t.Fatal(err)
	}
	acct, _ := s.Space("alpha")
	if uc.IssuerAccount != acct.Storage || !uc.Tags.Contains("cotal-profile:delivery") ||
		len(uc.AllowedConnectionTypes) != 1 || !uc.AllowedConnectionTypes.Contains(jwt.ConnectionTypeInProcess) || uc.Expires != 0 {
		t.Fatalf("the credential's claims: account %s tags %v connection types %v expires %d",
			uc.IssuerAccount, uc.Tags, uc.AllowedConnectionTypes, uc.Expires)
	}
	again, err := s.ClusterBackstop(path, []string{"alpha"})
	if err != nil || again.Spaces["alpha"] != c {
		t.Fatalf("a second call changed the identity (%v)", err)
	}
	read, err := ReadClusterBackstop(path)
	if err != nil || read.Spaces["alpha"] != c {
		t.Fatalf("ReadClusterBackstop = %+v, %v", read, err)
	}

	other := openStore(t)
	replaced, err := other.ClusterBackstop(path, []string{"alpha"})
	if err != nil || replaced.Spaces["alpha"] == c {
		t.Fatalf("another store kept a credential its account does not accept (%v)", err)
	}
}
