package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/suggest"
	"github.com/cotal-go/cotal/provisioner"
)

// resolveName is the instance id `send @name` delivers to, as endpoint.ResolveName finds it:
// the one active agent minted under that name, online or not, since an agent's DMs wait on
// its DM consumer until it returns (SPEC §8). A display name is the holder's choice, and an
// instance calling itself bob must not receive bob's DMs. Beside `cotal up` the credentials
// also feed the suggestions, so a mistyped name of an offline agent still finds it.
func resolveName(ctx context.Context, e *endpoint.Endpoint, s *session, name string) (string, error) {
	rctx, cancel := context.WithTimeout(ctx, rosterWait)
	defer cancel()
	id, err := e.ResolveName(rctx, name)
	switch {
	case errors.Is(err, endpoint.ErrAmbiguousName):
		return "", fmt.Errorf("@%s: %w; send to one of them by id", name, err)
	case errors.Is(err, endpoint.ErrUnknownName):
		return "", fmt.Errorf("@%s: %w: no active agent of space %s was minted with that name (a name `cotal who` "+
			"shows is the instance's own choice); `cotal auth list` lists the credentials, or send to an instance id%s",
			name, err, s.link.Space, suggest.DidYouMean(suggest.AtNames(suggest.Close(name, knownNames(ctx, e, s)))))
	}
	return id, err
}

// knownNames are the display names of the online instances other than e, and beside `cotal
// up` the names of the active agent credentials.
func knownNames(ctx context.Context, e *endpoint.Endpoint, s *session) []string {
	names := onlineNames(e)
	if s.mesh == nil {
		return names
	}
	recs, err := s.mesh.Credentials(ctx, s.link.Space)
	if err != nil {
		return names
	}
	now := time.Now()
	for _, r := range recs {
		if r.Profile == provisioner.ProfileAgent && r.Active(now) {
			names = append(names, r.Name)
		}
	}
	return names
}

// onlineNames are the display names of the online instances other than e itself.
func onlineNames(e *endpoint.Endpoint) []string {
	var names []string
	for _, p := range e.Roster().Snapshot() {
		if p.Online && p.Presence.Card.ID != e.ID() {
			names = append(names, p.Presence.Card.Name)
		}
	}
	return names
}
