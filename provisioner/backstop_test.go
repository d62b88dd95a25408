package provisioner

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
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
	ctl, err := jwt.DecodeUserClaims(c.Control.JWT)
	if err != nil || ctl.IssuerAccount != acct.PublicKey || !ctl.Tags.Contains("cotal-profile:delivery-control") {
		t.Fatalf("the control credential: %+v, %v; want a delivery-control user of the agent account", ctl, err)
	}
	again, err := s.ClusterBackstop(path, []string{"alpha"})
	if err != nil || !reflect.DeepEqual(again.Spaces["alpha"], c) {
		t.Fatalf("a second call changed the identity (%v)", err)
	}
	read, err := ReadClusterBackstop(path)
	if err != nil || !reflect.DeepEqual(read.Spaces["alpha"], c) {
		t.Fatalf("ReadClusterBackstop = %+v, %v", read, err)
	}

	other := openStore(t)
	replaced, err := other.ClusterBackstop(path, []string{"alpha"})
	if err != nil || replaced.Spaces["alpha"].JWT == c.JWT || replaced.Spaces["alpha"].Control.JWT == c.Control.JWT {
		t.Fatalf("another store kept a credential its account does not accept (%v)", err)
	}
}

// TestABackstopFileWithoutAControlCredentialIsUpgraded: a file written before the control
// listener had an identity of its own is refused to a member, saying what to do, and the
// key-store node keeps its delivery identity and adds the control one.
func TestABackstopFileWithoutAControlCredentialIsUpgraded(t *testing.T) {
	s := openStore(t)
	path := filepath.Join(t.TempDir(), "cluster-backstop.json")
	first, err := s.ClusterBackstop(path, []string{"alpha"})
	if err != nil {
		t.Fatal(err)
	}
	old := first.Spaces["alpha"]
	old.Control = nil
	data, err := json.Marshal(ClusterBackstop{Spaces: map[string]BackstopCredential{"alpha": old}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadClusterBackstop(path); !errors.Is(err, ErrNoControlCredential) || !strings.Contains(err.Error(), "copy it here again") {
		t.Errorf("a member reading the old file: %v, want ErrNoControlCredential saying to copy it again", err)
	}
	upgraded, err := s.ClusterBackstop(path, []string{"alpha"})
	if err != nil || upgraded.Spaces["alpha"].JWT != old.JWT || upgraded.Spaces["alpha"].Control == nil {
		t.Fatalf("the key store's upgrade: %+v, %v; want the old delivery identity and a control credential", upgraded.Spaces["alpha"], err)
	}
	if _, err := ReadClusterBackstop(path); err != nil {
		t.Errorf("the upgraded file: %v", err)
	}
}
