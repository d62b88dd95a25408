package provisioner

import (
	"fmt"
	"slices"
	"testing"

	"github.com/nats-io/jwt/v2"
	"go.etcd.io/bbolt"

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
	var inboxes []string
	err = s.db.View(func(tx *bbolt.Tx) error {
		b, err := spaceBucket(tx, "alpha")
		for _, id := range append(pooledIDs(b), ada.ID) {
			inboxes = append(inboxes, wire.StorageStreamSubject(id))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(inboxes)
	if !slices.Equal(streams, inboxes) || slices.Contains(streams, wire.StorageStreamSubject(bob.ID)) {
		t.Errorf("stream imports %q, want ada's inbox and the key pool's %q", streams, inboxes)
	}
}

// TestFreshMintsReSignTheAgentAccountOnlyToRefillTheKeyPool: a mint without a key of its own
// takes one whose inbox is imported already, so only the mint that finds the pool empty
// re-signs the agent account, and the refills grow with the account. A new space's account
// is first signed with its first pooled keys' inboxes, so its first mints re-sign nothing.
func TestFreshMintsReSignTheAgentAccountOnlyToRefillTheKeyPool(t *testing.T) {
	s := openStore(t)
	var updated []int
	for i := range 3*minPooledKeys + 8 {
		c := mint(t, s, MintRequest{Name: fmt.Sprint("agent", i)})
		if c.AccountUpdate != "" {
			updated = append(updated, i)
			if !importsInbox(decodeAccount(t, c.AccountUpdate), c.ID) {
				t.Fatalf("mint %d re-signed the account without its inbox", i)
			}
		}
	}
	// 4 keys at creation, then refills of 16 (4 rows), 16 (20 rows), 18 (36 rows / 2) and 27
	// (54 rows / 2).
	if want := []int{4, 20, 36, 54}; !slices.Equal(updated, want) {
		t.Errorf("mints %v of %d re-signed the agent account, want %v", updated, 3*minPooledKeys+8, want)
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

// TestOnlyTheJetStreamAPIImportSharesTheRequester: the JetStream API import shares the
// requester's identity, so the API audit names who created a consumer, and no other import
// does (a shared import writes its requester's details into the headers of stored messages);
// an agent account signed before is re-signed with it when the space is next opened.
func TestOnlyTheJetStreamAPIImportSharesTheRequester(t *testing.T) {
	s := openStore(t)
	check := func(t *testing.T) {
		t.Helper()
		a, err := s.Space("alpha")
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range decodeAccount(t, a.JWT).Imports {
			if want := string(im.Subject) == wire.SharedServiceSubject; im.Share != want {
				t.Errorf("import of %s shares the requester: %v, want %v", im.Subject, im.Share, want)
			}
		}
	}
	check(t)
	err := s.db.Update(func(tx *bbolt.Tx) error {
		b, err := spaceBucket(tx, "alpha")
		if err != nil {
			return err
		}
		claims, err := accountClaims(b)
		if err != nil {
			return err
		}
		for _, im := range claims.Imports {
			im.Share = false
		}
		_, err = storeClaims(tx, b, agentKeys, claims)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnsureSpace("alpha"); err != nil {
		t.Fatal(err)
	}
	check(t)
}
