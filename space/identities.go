package space

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/wire"
)

// The minted names agents may read (wire.IdentitiesBucket, docs/hostile-agents.md "Names are
// claims"): the provisioner identity writes them with the ACL records, under the space's mint
// lock, so a record never lags the credential a caller was just handed.

// putIdentity writes rec's identity record, and the name records of its name and of the name
// the id held before (a re-mint may rename it), each recomputed from the registry.
func (m *Mesh) putIdentity(ctx context.Context, rt *spaceRuntime, rec provisioner.Record, recs []provisioner.Record) error {
	id := wire.Sanitize(rec.ID)
	names := []string{rec.Name}
	if e, err := rt.identities.Get(ctx, id); err == nil {
		if old, err := wire.DecodeIdentityRecord(e.Value()); err == nil && !strings.EqualFold(old.Name, rec.Name) {
			names = append(names, old.Name)
		}
	} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("read the identity record of %s: %w", rec.ID, err)
	}
	data, err := json.Marshal(wire.IdentityRecord{Name: rec.Name, Profile: string(rec.Profile), Active: rec.Active(time.Now())})
	if err != nil {
		return err
	}
	if _, err := rt.identities.Put(ctx, id, data); err != nil {
		return fmt.Errorf("write the identity record of %s: %w", rec.ID, err)
	}
	for _, name := range names {
		if err := rt.putName(ctx, name, recs); err != nil {
			return err
		}
	}
	return nil
}

// putName writes name's record: the active agents of recs minted with it.
func (rt *spaceRuntime) putName(ctx context.Context, name string, recs []provisioner.Record) error {
	data, err := json.Marshal(wire.NameRecord{IDs: agentsNamed(recs, name, time.Now())})
	if err != nil {
		return err
	}
	if _, err := rt.identities.Put(ctx, wire.NameKey(name), data); err != nil {
		return fmt.Errorf("write the name record of %q: %w", name, err)
	}
	return nil
}

// agentsNamed are the ids of the agents of recs active at now whose minted name is name,
// compared case-insensitively, sorted.
func agentsNamed(recs []provisioner.Record, name string, now time.Time) []string {
	ids := []string{}
	for _, r := range recs {
		if r.Profile == provisioner.ProfileAgent && r.Active(now) && strings.EqualFold(r.Name, name) {
			ids = append(ids, wire.Sanitize(r.ID))
		}
	}
	slices.Sort(ids)
	return ids
}

// syncIdentities rewrites the bucket from recs at start: every id's record, the record of every
// name recs hold, and an empty record for every name key no active agent holds any more.
func (m *Mesh) syncIdentities(ctx context.Context, rt *spaceRuntime, recs []provisioner.Record) error {
	keys := map[string]string{}
	for _, rec := range recs {
		data, err := json.Marshal(wire.IdentityRecord{Name: rec.Name, Profile: string(rec.Profile), Active: rec.Active(time.Now())})
		if err != nil {
			return err
		}
		if _, err := rt.identities.Put(ctx, wire.Sanitize(rec.ID), data); err != nil {
			return fmt.Errorf("write the identity record of %s: %w", rec.ID, err)
		}
		keys[wire.NameKey(rec.Name)] = rec.Name
	}
	for _, name := range keys {
		if err := rt.putName(ctx, name, recs); err != nil {
			return err
		}
	}
	// A name no record holds any more keeps its key with no ids, so a client reading it
	// finds nobody rather than an old holder.
	prefix := "$KV." + rt.names.IdentitiesBucket() + "."
	return rt.streamSubjects(ctx, wire.KVStream(rt.names.IdentitiesBucket()), prefix+"name.>", func(page map[string]uint64) (int, error) {
		for subject := range page {
			key := strings.TrimPrefix(subject, prefix)
			if _, ok := keys[key]; ok {
				continue
			}
			if _, err := rt.identities.Put(ctx, key, []byte(`{"ids":[]}`)); err != nil {
				return len(page), fmt.Errorf("clear the name record %s: %w", key, err)
			}
		}
		return len(page), nil
	})
}
