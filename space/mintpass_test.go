package space_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// TestMintsThatCanLeaveSomethingBehindStillReconcileBeforeReturning: a mint of a new identity
// from the key pool skips the reconciliation pass, which could find nothing of that identity's
// making. The mints for which a pass can find something still run it before they return: a
// Replace, whose replaced credentials' consumers must go, and an agent minted without
// provision, whose consumers only the pass creates. With no periodic pass, only the mint's own
// pass can have done either.
func TestMintsThatCanLeaveSomethingBehindStillReconcileBeforeReturning(t *testing.T) {
	t.Parallel()
	m := spacetest.New(t, noPeriodicPass)
	n := wire.NewNames("main")

	t.Run("a fresh provisioned mint has its consumers", func(t *testing.T) {
		ada := mint(t, m, "ada", provisioner.ProfileAgent, provisioner.Grants{})
		if !hasConsumer(t, m, n.DMStream(), n.DMConsumer(ada.ID)) {
			t.Fatalf("%s is missing after a provisioned mint", n.DMConsumer(ada.ID))
		}
	})
	t.Run("a mint without provision creates the agent's consumers in its pass", func(t *testing.T) {
		cred, err := m.Mint(context.Background(), provisioner.MintRequest{Space: "main", Name: "bea",
			Profile: provisioner.ProfileAgent})
		if err != nil {
			t.Fatal(err)
		}
		if !hasConsumer(t, m, n.DMStream(), n.DMConsumer(cred.ID)) {
			t.Fatalf("%s is missing after a mint without provision", n.DMConsumer(cred.ID))
		}
	})
	t.Run("a replacing mint deletes the replaced credential's consumers", func(t *testing.T) {
		old := mint(t, m, "cleo", provisioner.ProfileAgent, provisioner.Grants{})
		renewed := mintWith(t, m, provisioner.MintRequest{Space: "main", Name: "cleo",
			Profile: provisioner.ProfileAgent, Replace: true})
		if len(renewed.Replaced) != 1 || renewed.Replaced[0] != old.ID {
			t.Fatalf("the mint replaced %v, want [%s]", renewed.Replaced, old.ID)
		}
		if hasConsumer(t, m, n.DMStream(), n.DMConsumer(old.ID)) {
			t.Fatalf("%s of the replaced credential outlived the mint", n.DMConsumer(old.ID))
		}
		if !hasConsumer(t, m, n.DMStream(), n.DMConsumer(renewed.ID)) {
			t.Fatalf("%s of the new credential is missing", n.DMConsumer(renewed.ID))
		}
	})
}

// hasConsumer reports whether the broker holds consumer name on stream.
func hasConsumer(t *testing.T, m *space.Mesh, stream, name string) bool {
	t.Helper()
	jsz, err := m.Broker().Server().Jsz(&server.JSzOptions{Accounts: true, Streams: true, Consumer: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, acc := range jsz.AccountDetails {
		for _, st := range acc.Streams {
			if st.Name != stream {
				continue
			}
			for _, c := range st.Consumer {
				if c.Name == name {
					return true
				}
			}
		}
	}
	return false
}
