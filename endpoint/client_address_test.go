package endpoint_test

import (
	"errors"
	"testing"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/wire"
)

func TestSendDMRefusesATargetThatIsNotAnInstanceID(t *testing.T) {
	h := newHarness(t)
	alice := h.connect("alice")
	for _, to := range []string{"bob", "UCGNEAN", "", newID(t)[:55]} {
		t.Run("target "+to, func(t *testing.T) {
			_, err := alice.SendDM(ctxT(t), to, text("x"))
			if !errors.Is(err, endpoint.ErrNotInstanceID) || !errors.Is(err, wire.ErrInvalidMessage) {
				t.Fatalf("SendDM(%q) = %v, want ErrNotInstanceID", to, err)
			}
		})
	}
}

func TestResolveNameFindsTheOneInstanceOfAName(t *testing.T) {
	h := newHarness(t)
	alice := h.connect("alice")
	bob := h.connect("bob")
	h.connect("twin")
	h.connect("Twin")
	await.True(t, settle, "bob and both twins in alice's roster", func() bool {
		online := 0
		for _, p := range alice.Roster().Snapshot() {
			if p.Online && p.Presence.Card.ID != alice.ID() {
				online++
			}
		}
		return online == 3
	})

	t.Run("a unique name, in any case, reaches its instance", func(t *testing.T) {
		id, err := alice.ResolveName(ctxT(t), "BOB")
		if err != nil || id != bob.ID() {
			t.Fatalf("ResolveName(BOB) = %s, %v; want %s", id, err, bob.ID())
		}
		r, err := alice.SendDM(ctxT(t), id, text("by name"))
		if err != nil {
			t.Fatal(err)
		}
		await.True(t, settle, "bob receives the DM", func() bool { return len(bob.rec.withID(r.ID)) == 1 })
	})
	for _, c := range []struct {
		name string
		to   string
		want error
	}{
		{"a name no one online has is refused", "carol", endpoint.ErrUnknownName},
		{"a name two instances share is refused", "twin", endpoint.ErrAmbiguousName},
		{"its own name does not resolve to itself", "alice", endpoint.ErrUnknownName},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := alice.ResolveName(ctxT(t), c.to); !errors.Is(err, c.want) {
				t.Fatalf("ResolveName(%q) = %v, want %v", c.to, err, c.want)
			}
		})
	}
}
