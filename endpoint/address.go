package endpoint

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nkeys"

	"github.com/cotal-go/cotal/wire"
)

// Addressing errors.
var (
	// ErrNotInstanceID: a DM target is not an instance id, a user nkey public key (SPEC §2).
	// A DM on any other token is stored where no instance reads it.
	ErrNotInstanceID = errors.New("not an instance id")
	// ErrUnknownName: no instance, other than this one, has the name (ResolveName).
	ErrUnknownName = errors.New("no instance has that name")
	// ErrAmbiguousName: more than one instance has the name (ResolveName).
	ErrAmbiguousName = errors.New("more than one instance has that name")
)

// checkDMTarget is checkInstanceID remembering the last target that passed, so that a run of
// DMs to one peer decodes its key once.
func (e *Endpoint) checkDMTarget(to string) error {
	if last := e.lastDMTarget.Load(); last != nil && *last == to {
		return nil
	}
	if err := checkInstanceID(to); err != nil {
		return err
	}
	// A copy, so that to itself does not escape and the cached case allocates nothing.
	last := to
	e.lastDMTarget.Store(&last)
	return nil
}

// checkInstanceID refuses a DM target that is not an instance id (SPEC §2). The error wraps
// both ErrNotInstanceID and wire.ErrInvalidMessage.
func checkInstanceID(to string) error {
	if nkeys.IsValidPublicUserKey(to) {
		return nil
	}
	return fmt.Errorf("%w: %w: DM target %q is not a user nkey public key (U and 55 more characters); "+
		"to address an instance by its display name, look its id up with ResolveName", wire.ErrInvalidMessage, ErrNotInstanceID, to)
}

// ResolveName returns the id of the one instance, other than this one, that name stands for.
// On a mesh that publishes minted names (any mesh with credentials) that is the one active
// agent minted with name, online or not, since its DMs wait for it (SPEC §8): a display name
// is its holder's choice, and an instance calling itself bob never resolves as bob. When no
// agent of this mesh was minted with name, an online instance whose id this mesh never minted
// (an agent of a mesh linked as a leaf, docs/leaf.md) may hold it by its display name; an
// open mesh, which has no credentials, resolves among every online display name. Both wait
// (bounded by ctx) for the roster's first complete read. Names compare case-insensitively as
// mentions do (SPEC §4). No such instance is ErrUnknownName; several are ErrAmbiguousName,
// whose message lists their ids.
func (e *Endpoint) ResolveName(ctx context.Context, name string) (string, error) {
	ids, err := e.mintedAgents(ctx, name)
	switch {
	case errors.Is(err, ErrNoMintedNames):
		ids, err = e.onlineNamed(ctx, name)
	case err == nil && len(ids) == 0:
		ids, err = e.onlineNamed(ctx, name)
		if err == nil {
			ids, err = e.notMinted(ctx, ids)
		}
	}
	if err != nil {
		return "", err
	}
	ids = slices.DeleteFunc(ids, func(id string) bool { return id == e.id })
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("%w: %q", ErrUnknownName, name)
	case 1:
		return ids[0], nil
	}
	return "", fmt.Errorf("%w: %q is %s", ErrAmbiguousName, name, strings.Join(ids, ", "))
}

// onlineNamed are the ids of the online instances whose display name is name.
func (e *Endpoint) onlineNamed(ctx context.Context, name string) ([]string, error) {
	select {
	case <-e.roster.Loaded():
	case <-ctx.Done():
		return nil, fmt.Errorf("resolve %q: the roster did not load: %w", name, ctx.Err())
	}
	var ids []string
	for _, p := range e.roster.Snapshot() {
		if p.Online && strings.EqualFold(p.Presence.Card.Name, name) {
			ids = append(ids, p.Presence.Card.ID)
		}
	}
	return ids, nil
}

// notMinted are the ids of ids that this mesh never minted: an instance minted here shows
// under its minted name only.
func (e *Endpoint) notMinted(ctx context.Context, ids []string) ([]string, error) {
	var out []string
	for _, id := range ids {
		_, found, err := e.MintedName(ctx, id)
		if err != nil {
			return nil, err
		}
		if !found {
			out = append(out, id)
		}
	}
	return out, nil
}
