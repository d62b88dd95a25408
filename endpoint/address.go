package endpoint

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nkeys"

	"github.com/cotal-go/cotal/wire"
)

// Addressing errors.
var (
	// ErrNotInstanceID: a DM target is not an instance id, a user nkey public key (SPEC §2).
	// A DM on any other token is stored where no instance reads it.
	ErrNotInstanceID = errors.New("not an instance id")
	// ErrUnknownName: no online instance, other than this one, has the display name.
	ErrUnknownName = errors.New("no online instance has that name")
	// ErrAmbiguousName: more than one online instance has the display name.
	ErrAmbiguousName = errors.New("more than one online instance has that name")
)

// checkInstanceID refuses a DM target that is not an instance id (SPEC §2). The error wraps
// both ErrNotInstanceID and wire.ErrInvalidMessage.
func checkInstanceID(to string) error {
	if nkeys.IsValidPublicUserKey(to) {
		return nil
	}
	return fmt.Errorf("%w: %w: DM target %q is not a user nkey public key (U and 55 more characters); "+
		"to address an instance by its display name, use SendDMByName", wire.ErrInvalidMessage, ErrNotInstanceID, to)
}

// ResolveName returns the id of the one online instance, other than this one, whose display
// name is name, compared case-insensitively as mentions resolve (SPEC §4). It waits, bounded
// by ctx, for the roster's first complete read. No such instance is ErrUnknownName; several
// are ErrAmbiguousName, whose message lists their ids.
func (e *Endpoint) ResolveName(ctx context.Context, name string) (string, error) {
	select {
	case <-e.roster.Loaded():
	case <-ctx.Done():
		return "", fmt.Errorf("resolve %q: the roster did not load: %w", name, ctx.Err())
	}
	var ids []string
	for _, p := range e.roster.Snapshot() {
		if p.Online && p.Presence.Card.ID != e.ID() && strings.EqualFold(p.Presence.Card.Name, name) {
			ids = append(ids, p.Presence.Card.ID)
		}
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("%w: %q", ErrUnknownName, name)
	case 1:
		return ids[0], nil
	}
	return "", fmt.Errorf("%w: %q is %s", ErrAmbiguousName, name, strings.Join(ids, ", "))
}

// SendDMByName unicasts parts to the one online instance whose display name is name, as
// ResolveName finds it, and returns where JetStream stored the DM. An offline instance is
// reached only by id, with SendDM: its DMs wait for it.
func (e *Endpoint) SendDMByName(ctx context.Context, name string, parts []wire.Part, opts ...SendOption) (Receipt, error) {
	id, err := e.ResolveName(ctx, name)
	if err != nil {
		return Receipt{}, err
	}
	return e.SendDM(ctx, id, parts, opts...)
}
