package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/suggest"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
)

// resolveName is the instance id `send @name` delivers to: the one active agent credential
// minted under that name, online or not, since an agent's DMs wait on its DM consumer until
// it returns (SPEC §8). A display name is the holder's choice, and an instance calling itself
// bob must not receive bob's DMs. Beside `cotal up` the credentials say who that is; with
// only --link and --creds the mesh's published minted names do (endpoint.ResolveName). An
// open mesh has neither, and then it is the one online instance, other than the sender, with
// that display name, which the receiving side cannot verify.
func resolveName(ctx context.Context, e *endpoint.Endpoint, s *session, name string) (string, error) {
	if s.mesh != nil {
		recs, err := s.mesh.Credentials(ctx, s.link.Space)
		if err == nil {
			return agentNamed(recs, name, s.link.Space)
		}
		if !errors.Is(err, space.ErrOpenMode) {
			return "", fmt.Errorf("@%s: look the name up among the credentials: %w", name, withHint(err))
		}
	}
	rctx, cancel := context.WithTimeout(ctx, rosterWait)
	defer cancel()
	id, err := e.ResolveName(rctx, name)
	switch {
	case errors.Is(err, endpoint.ErrAmbiguousName):
		return "", fmt.Errorf("@%s: %w; send to one of them by id", name, err)
	case errors.Is(err, endpoint.ErrUnknownName):
		return "", fmt.Errorf("@%s: %w: no active agent of space %s was minted with that name (a name `cotal who` "+
			"shows is the instance's own choice); send to an instance id%s",
			name, err, s.link.Space, suggest.DidYouMean(suggest.AtNames(suggest.Close(name, onlineNames(e)))))
	}
	return id, err
}

// agentNamed is the id of the one active agent credential in recs whose name is name, compared
// case-insensitively as the roster compares display names.
func agentNamed(recs []space.CredentialInfo, name, spaceName string) (string, error) {
	now := time.Now()
	var ids, names []string
	for _, r := range recs {
		if r.Profile != provisioner.ProfileAgent || !r.Active(now) {
			continue
		}
		names = append(names, r.Name)
		if strings.EqualFold(r.Name, name) {
			ids = append(ids, r.ID)
		}
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("@%s: no active agent credential in space %s is named %q (a name `cotal who` shows is the "+
			"instance's own choice, not always the name it was minted with); `cotal auth list` lists the credentials%s",
			name, spaceName, name, suggest.DidYouMean(suggest.AtNames(suggest.Close(name, names))))
	case 1:
		return ids[0], nil
	}
	return "", fmt.Errorf("@%s: %d active agent credentials are named so: %s; send to one of them by id",
		name, len(ids), strings.Join(ids, ", "))
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
