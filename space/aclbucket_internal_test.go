package space

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/provisioner"
)

// TestTheBucketACLKnowsTheMintedNames follows the buckets as a cluster node without the key
// store does, over the delivery identity's own connection: a mint, a name's case, a revoke and
// a new mint of the name change what it answers, so a backstop there resolves @mentions by
// minted names, never by the names agents announce.
func TestTheBucketACLKnowsTheMintedNames(t *testing.T) {
	m := startTestMesh(t, Options{Memory: true})
	rt, err := m.runtime("main")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := newBucketACL(rt.names, rt.dlvConn, m.log)
	loaded := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); a.watch(ctx, func() { close(loaded) }) }()
	defer func() { cancel(); <-done }()
	<-loaded

	g := provisioner.Grants{Subscribe: []string{"general"}}
	bob := testMint(t, m, "bob", provisioner.ProfileAgent, g)
	await.True(t, 10*time.Second, "bob's minted name", func() bool {
		name, ok := a.MintedName(bob.ID)
		return ok && name == "bob" && slices.Equal(a.MintedAs("BOB"), []string{bob.ID})
	})
	if _, ok := a.ReadACL(bob.ID); !ok {
		t.Error("bob's ACL record is not known")
	}
	if err := m.Revoke(ctx, "main", bob.ID); err != nil {
		t.Fatal(err)
	}
	await.True(t, 10*time.Second, "bob's name to stand for nobody once revoked", func() bool {
		_, ok := a.MintedName(bob.ID)
		return !ok && len(a.MintedAs("bob")) == 0
	})
	robert := testMint(t, m, "bob", provisioner.ProfileAgent, g)
	await.True(t, 10*time.Second, "the name to stand for the new bob", func() bool {
		return slices.Equal(a.MintedAs("bob"), []string{robert.ID})
	})
}
