package endpoint_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
)

// TestCredentialTellsWhatTheConnectionWasGranted: an Endpoint connected with a credential
// reports the grants it was minted with, as copies; one of an open mesh reports none.
func TestCredentialTellsWhatTheConnectionWasGranted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t.Run("a minted agent sees its own read and post grants", func(t *testing.T) {
		m := spacetest.New(t)
		e, err := m.Endpoint(ctx, space.AgentSpec{Name: "worker", Grants: provisioner.Grants{Subscribe: []string{"ops"},
			AllowSubscribe: []string{"ops", "general"}, AllowPublish: []string{"ops"}, Role: "build"}})
		if err != nil {
			t.Fatal(err)
		}
		c, ok := e.Credential()
		if !ok || c.ID != e.ID() || c.Name != "worker" || c.Space != "main" || c.Profile != "agent" || c.Role != "build" {
			t.Fatalf("credential %+v, %v: want worker's, an agent of main with role build", c, ok)
		}
		if !slices.Equal(c.ReadACL, []string{"ops", "general"}) || !slices.Equal(c.PublishACL, []string{"ops"}) ||
			!slices.Equal(c.Subscribe, []string{"ops"}) {
			t.Errorf("grants read %v post %v subscribe %v, want read ops, general, post ops, subscribe ops",
				c.ReadACL, c.PublishACL, c.Subscribe)
		}
		c.ReadACL[0] = "changed"
		if again, _ := e.Credential(); again.ReadACL[0] != "ops" {
			t.Errorf("a caller's change reached the Endpoint: %v", again.ReadACL)
		}
	})
	t.Run("an open mesh's Endpoint has no credential", func(t *testing.T) {
		m := spacetest.New(t, func(o *space.Options) { o.Open = true })
		e, err := endpoint.Connect(ctx, endpoint.Options{InProcess: m.InProcess(), Space: "main", Name: "open"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close(context.Background()) })
		if c, ok := e.Credential(); ok {
			t.Errorf("credential %+v in open mode", c)
		}
	})
}
