package provisioner

import (
	"slices"
	"testing"

	"github.com/nats-io/jwt/v2"

	"github.com/cotal-go/cotal/wire"
)

// TestStorageAccountExportsEverythingOnce: one service export of ">" (a single export is
// what keeps a response from re-entering storage; wire/accounts.go) answering with a stream
// of responses for ResponseThreshold, and one stream export of ">".
func TestStorageAccountExportsEverythingOnce(t *testing.T) {
	s := openStore(t)
	a, err := s.Space("alpha")
	if err != nil {
		t.Fatal(err)
	}
	storage := decodeAccount(t, a.StorageJWT)
	if len(storage.Exports) != 2 {
		t.Fatalf("storage exports %d entries, want 2: %+v", len(storage.Exports), storage.Exports)
	}
	for _, e := range storage.Exports {
		if e.Subject != ">" || e.TokenReq {
			t.Errorf("export %+v: want a public export of >", e)
		}
		if e.Type == jwt.Service && (e.ResponseType != jwt.ResponseTypeStream || e.ResponseThreshold != ResponseThreshold) {
			t.Errorf("service export %+v: want stream responses kept %v", e, ResponseThreshold)
		}
	}
	if storage.Subject == a.PublicKey || len(storage.Imports) != 0 {
		t.Errorf("storage account %s imports %d entries; want its own account, importing nothing", storage.Subject, len(storage.Imports))
	}
}

// TestAgentAccountImportsStorageServicesAndEachLiveInbox: the agent account imports wire's
// service subjects and the inbox of every credential that can connect, no other; a revoked
// credential's inbox goes with its revocation.
func TestAgentAccountImportsStorageServicesAndEachLiveInbox(t *testing.T) {
	s := openStore(t)
	ada := mint(t, s, MintRequest{Name: "ada"})
	bob := mint(t, s, MintRequest{Name: "bob", Profile: ProfileObserver})
	token, err := s.Revoke("alpha", bob.ID)
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Space("alpha")
	if err != nil {
		t.Fatal(err)
	}
	var services, streams []string
	for _, im := range decodeAccount(t, token).Imports {
		if im.Account != a.Storage {
			t.Errorf("import %+v is not from the space's storage account %s", im, a.Storage)
		}
		if im.Type == jwt.Service {
			services = append(services, string(im.Subject))
		} else {
			streams = append(streams, string(im.Subject))
		}
	}
	want := wire.NewNames("alpha").StorageServiceSubjects()
	slices.Sort(want)
	slices.Sort(services)
	if !slices.Equal(services, want) {
		t.Errorf("service imports %q, want %q", services, want)
	}
	if want := []string{wire.StorageStreamSubject(ada.ID)}; !slices.Equal(streams, want) {
		t.Errorf("stream imports %q, want ada's inbox only %q", streams, want)
	}
}

// TestInfrastructureCredentialsBelongToStorage: cotal's own connections are users of the
// storage account, every handed-out credential of the agent account.
func TestInfrastructureCredentialsBelongToStorage(t *testing.T) {
	s := openStore(t)
	a, err := s.Space("alpha")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Profile{ProfileProvisioner, ProfileDelivery} {
		c, err := s.InfraCredential("alpha", p)
		if err != nil {
			t.Fatal(err)
		}
		if got := decodeUser(t, c.JWT).IssuerAccount; got != a.Storage {
			t.Errorf("%s credential of account %s, want storage %s", p, got, a.Storage)
		}
	}
	if got := decodeUser(t, mint(t, s, MintRequest{}).JWT).IssuerAccount; got != a.PublicKey {
		t.Errorf("agent credential of account %s, want the agent account %s", got, a.PublicKey)
	}
}
