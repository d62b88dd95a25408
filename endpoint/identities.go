package endpoint

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/wire"
)

// A display name is its holder's own choice; the name a credential was minted with is
// published by the mesh in wire.IdentitiesBucket (docs/hostile-agents.md "Names are a
// holder's choice").
// The Endpoint reads it by get, keeps what it read for identityTTL, and never watches it.

// identityTTL is how long a minted name read once is reused; a re-mint that renames an id is
// seen after at most this long.
const identityTTL = 30 * time.Second

// ErrNoMintedNames is returned by MintedName on a mesh that publishes no minted names: an
// open mesh, or one older than the identities bucket.
var ErrNoMintedNames = errors.New("endpoint: the mesh publishes no minted names")

// identityCache is the Endpoint's handle on the identities bucket and what it read of it.
type identityCache struct {
	mu   sync.Mutex
	kv   jetstream.KeyValue
	byID map[string]identityEntry
}

type identityEntry struct {
	rec   wire.IdentityRecord
	found bool
	at    time.Time
}

// bucket opens the identities bucket once; ErrNoMintedNames when the mesh has none.
func (e *Endpoint) identityBucket(ctx context.Context) (jetstream.KeyValue, error) {
	if !e.minted {
		return nil, ErrNoMintedNames
	}
	c := &e.identities
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kv != nil {
		return c.kv, nil
	}
	kv, err := e.openBucket(ctx, e.names.IdentitiesBucket())
	if errors.Is(err, ErrNotProvisioned) {
		return nil, fmt.Errorf("%w: %w", ErrNoMintedNames, err)
	}
	if err != nil {
		return nil, err
	}
	c.kv = kv
	return kv, nil
}

// MintedName returns the record the mesh publishes for id: the name and profile its
// credential was minted with, and whether it is active. found is false for an id the space
// never minted (or whose record the mesh no longer keeps); the error wraps ErrNoMintedNames on
// a mesh that publishes none. A record read within identityTTL is not read again.
func (e *Endpoint) MintedName(ctx context.Context, id string) (rec wire.IdentityRecord, found bool, err error) {
	key := wire.Sanitize(id)
	c := &e.identities
	c.mu.Lock()
	ent, ok := c.byID[key]
	c.mu.Unlock()
	if ok && time.Since(ent.at) < identityTTL {
		return ent.rec, ent.found, nil
	}
	kv, err := e.identityBucket(ctx)
	if err != nil {
		return wire.IdentityRecord{}, false, err
	}
	ent = identityEntry{at: time.Now()}
	err = retryRead(ctx, readAttempt, func(ctx context.Context) error {
		got, err := kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		r, err := wire.DecodeIdentityRecord(got.Value())
		if err == nil {
			ent.rec, ent.found = *r, true
		}
		return nil
	})
	if err != nil {
		return wire.IdentityRecord{}, false, fmt.Errorf("read the minted name of %s: %w", id, err)
	}
	c.mu.Lock()
	if c.byID == nil {
		c.byID = map[string]identityEntry{}
	}
	c.byID[key] = ent
	c.mu.Unlock()
	return ent.rec, ent.found, nil
}

// mintedAgents returns the ids of the active agents whose credential was minted with name,
// compared case-insensitively, online or not; none when no active agent holds it. The error
// wraps ErrNoMintedNames on a mesh that publishes none.
func (e *Endpoint) mintedAgents(ctx context.Context, name string) ([]string, error) {
	kv, err := e.identityBucket(ctx)
	if err != nil {
		return nil, err
	}
	var ids []string
	err = retryRead(ctx, readAttempt, func(ctx context.Context) error {
		got, err := kv.Get(ctx, wire.NameKey(name))
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			ids = nil
			return nil
		}
		if err != nil {
			return err
		}
		r, err := wire.DecodeNameRecord(got.Value())
		if err != nil {
			return fmt.Errorf("the name record of %q: %w", name, err)
		}
		ids = r.IDs
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("look up the agents minted as %q: %w", name, err)
	}
	return ids, nil
}

// SenderName is how a sender should be shown: its minted name when the mesh publishes one
// that differs from the name it claims (from.Name or card.name), with the claim beside it,
// as `mallory (calls itself "bob")`; otherwise the claimed name as it is. A lookup that fails
// shows the claim, since the mesh cannot say otherwise.
func (e *Endpoint) SenderName(ctx context.Context, ref wire.EndpointRef) string {
	rec, found, err := e.MintedName(ctx, ref.ID)
	if err != nil || !found {
		return ref.Name
	}
	return ShowName(rec.Name, ref.Name)
}

// ShowName is how an instance minted as minted that calls itself claimed is shown: claimed
// when the two agree (case-insensitively), else `mallory (calls itself "bob")`.
func ShowName(minted, claimed string) string {
	if strings.EqualFold(minted, claimed) {
		return claimed
	}
	return fmt.Sprintf("%s (calls itself %q)", minted, claimed)
}
