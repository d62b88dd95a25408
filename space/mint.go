package space

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/internal/retry"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/wire"
)

// CredentialInfo is one registry row for listing; it never carries key material.
type CredentialInfo = provisioner.Record

// ErrOpenMode is returned for credential operations on an unauthenticated mesh.
var ErrOpenMode = errors.New("space: the mesh runs in open mode and has no credentials")

// Mint issues a credential in a running mesh. The order matters: the ACL record is written,
// and then a re-mint's revocation of the previous credential reaches the broker, before the
// new credential is returned, so "current read ACL" (SPEC §9 item 6) is never two things.
// Before it returns, the durable copies of channels a re-mint took away are deleted and every
// consumer of the space is reconciled against the new grants, so nothing made under the old
// credential reads past the new one; that pass also creates any missing bind-only consumer of
// an active agent, so with a running mesh an agent's consumers exist even without provision.
// A new identity from the key pool that replaces nobody skips the pass when provisioned (or
// not an agent): nothing was made under grants it never held.
func (m *Mesh) Mint(ctx context.Context, req provisioner.MintRequest) (*provisioner.Credential, error) {
	if m.store == nil {
		return nil, m.noStore()
	}
	rt, err := m.runtime(req.Space)
	if err != nil {
		return nil, err
	}
	rt.mintMu.Lock()
	defer rt.mintMu.Unlock()
	cred, err := m.store.Mint(req)
	if err != nil {
		return nil, err
	}
	// The new read ACL is in force for the trusted reader before the previous credential is
	// cut off, so no entry is authorized against the old, wider ACL in between.
	rec, err := m.store.Record(req.Space, cred.ID)
	if err != nil {
		return nil, err
	}
	prev, reMint := rt.acls.ReadACL(cred.ID)
	if err := m.putRecords(ctx, rt, rec); err != nil {
		return nil, err
	}
	if err := m.putACLs(ctx, rt, cred.Replaced); err != nil {
		return nil, err
	}
	if cred.AccountUpdate != "" {
		if err := m.broker.UpdateAccount(cred.AccountUpdate); err != nil {
			return nil, fmt.Errorf("apply the agent account update (the new inbox import or a revocation): %w", err)
		}
	}
	if cred.Profile == provisioner.ProfileAgent {
		if err := provisionInstance(ctx, rt.js, rt.names, cred.ID, cred.Grants.Role, m.opts.AckWait); err != nil {
			return nil, err
		}
	}
	// A new identity from the key pool held no grants before, so nothing was made under them,
	// and provisioning has just made its consumers: the pass would find nothing of its own.
	// It runs for re-mints and replacements, and the on-create check and the periodic pass
	// cover everyone else.
	if req.Identity == nil && !reMint && len(cred.Replaced) == 0 {
		return cred, nil
	}
	m.afterGrantChange(ctx, rt, rec, reMint && lostPatterns(prev, provisioner.ACLFor(rec)), passCause{minted: cred.ID})
	return cred, nil
}

// afterGrantChange re-checks everything rec's identity may have created under its previous
// grants (docs/hostile-agents.md "Nothing outlives its grants"): every consumer of the space,
// and the durable copies already handed to it. The credential change itself has happened and is
// not undone; a failure here is logged, counted, and closed by the next periodic pass.
//
// Only a narrowing (the previous ACL held a pattern the new one lacks) prunes the handoff: it
// reads every copy waiting for the member, which a fresh mint or a same-ACL re-mint has no
// need to pay.
func (m *Mesh) afterGrantChange(ctx context.Context, rt *spaceRuntime, rec provisioner.Record, narrowed bool, cause passCause) {
	if narrowed && rec.Profile == provisioner.ProfileAgent && !rec.Revoked {
		n, err := rt.pruneHandoff(ctx, rec.ID, provisioner.ACLFor(rec))
		if err != nil {
			m.log.Error("pruning durable copies after a credential change failed", "space", rt.name, "id", rec.ID, "err", err)
		}
		rt.reconciled.pruned.Add(int64(n))
		if n > 0 {
			m.log.Warn("deleted durable copies of channels outside the new read ACL", "space", rt.name,
				"id", rec.ID, "name", rec.Name, "copies", n)
		}
	}
	if _, err := m.reconcile(ctx, rt, cause); err != nil {
		m.log.Error("reconciling consumers after a credential change failed", "space", rt.name, "id", rec.ID, "err", err)
	}
}

// Revoke cuts a credential off at once: the account's revocation list reaches the broker
// (connected clients of that id are disconnected), its ACL record reads nothing, and every
// consumer it owned is deleted by a reconciliation pass.
func (m *Mesh) Revoke(ctx context.Context, space, id string) error {
	if m.store == nil {
		return m.noStore()
	}
	rt, err := m.runtime(space)
	if err != nil {
		return err
	}
	rt.mintMu.Lock()
	defer rt.mintMu.Unlock()
	accountJWT, err := m.store.Revoke(space, id)
	if err != nil {
		return err
	}
	if err := m.broker.UpdateAccount(accountJWT); err != nil {
		return fmt.Errorf("apply revocation: %w", err)
	}
	rec, err := m.store.Record(space, id)
	if err != nil {
		return err
	}
	if err := m.putRecords(ctx, rt, rec); err != nil {
		return err
	}
	m.afterGrantChange(ctx, rt, rec, false, passCause{})
	return nil
}

// Credentials lists every credential minted in space (no key material).
func (m *Mesh) Credentials(space string) ([]CredentialInfo, error) {
	if m.store == nil {
		return nil, m.noStore()
	}
	if _, err := m.runtime(space); err != nil {
		return nil, err
	}
	return m.store.List(space)
}

// putACL writes rec's ACL record to cotal_acl_<s> for a cluster node that runs the backstop
// without the key store (bucketACL), and updates the in-memory copy this node's trusted
// reader authorizes against, with the name an active agent was minted with.
func (rt *spaceRuntime) putACL(ctx context.Context, rec provisioner.Record) error {
	acl := provisioner.ACLFor(rec)
	name := ""
	if rec.Profile == provisioner.ProfileAgent && rec.Active(time.Now()) {
		name = rec.Name
	}
	rt.acls.set(rec.ID, acl, name)
	data, err := json.Marshal(acl)
	if err != nil {
		return err
	}
	err = leaderless.Do(ctx, noStreamAnswer, func() error {
		_, err := rt.acl.Put(ctx, wire.Sanitize(rec.ID), data)
		return err
	})
	if err != nil {
		return fmt.Errorf("write ACL record of %s: %w", rec.ID, err)
	}
	return nil
}

// leaderless is how a record (an ACL record, the channel registry's `=defaults`) is written
// again while its bucket's stream answers no publish: a replicated stream electing a leader
// (after a cluster starts, or loses a node) has nobody to store it for a few seconds. Each
// write is whole or a create, so writing it twice changes nothing.
var leaderless = retry.Policy{Tries: 8, First: 50 * time.Millisecond}

// noStreamAnswer reports whether err is a publish no stream answered, which leaderless retries.
func noStreamAnswer(err error) bool { return errors.Is(err, jetstream.ErrNoStreamResponse) }

// putACLs writes the current records of each id (putRecords); an ACL record reads nothing
// once its credential is revoked.
func (m *Mesh) putACLs(ctx context.Context, rt *spaceRuntime, ids []string) error {
	for _, id := range ids {
		rec, err := m.store.Record(rt.name, id)
		if err != nil {
			return err
		}
		if err := m.putRecords(ctx, rt, rec); err != nil {
			return err
		}
	}
	return nil
}

// putRecords writes what the mesh publishes of rec after a mint, re-mint or revoke: its ACL
// record, and its identity and name records (identities.go).
func (m *Mesh) putRecords(ctx context.Context, rt *spaceRuntime, rec provisioner.Record) error {
	if err := rt.putACL(ctx, rec); err != nil {
		return err
	}
	recs, err := m.store.List(rt.name)
	if err != nil {
		return err
	}
	return m.putIdentity(ctx, rt, rec, recs)
}

// syncRegistry brings the space in line with the registry at start, before the delivery service
// and any client connect: every ACL record is rewritten (credentials minted while no mesh ran
// get theirs, a tampered one is put back), and one reconciliation pass leaves exactly the
// consumers the registry allows: every active agent's bind-only consumers exist with their
// spec's config, so an offline mint needs no second step, and whatever an identity since
// revoked, or anyone while the mesh was down, left behind is gone (docs/hostile-agents.md
// "Nothing outlives its grants").
func (m *Mesh) syncRegistry(ctx context.Context, rt *spaceRuntime) error {
	if m.store == nil {
		return nil
	}
	recs, err := m.store.List(rt.name)
	if err != nil {
		return err
	}
	for _, rec := range recs {
		if err := rt.putACL(ctx, rec); err != nil {
			return err
		}
	}
	if err := m.syncIdentities(ctx, rt, recs); err != nil {
		return err
	}
	return m.reconcileAtStart(ctx, rt, recs)
}

// lostPatterns reports whether prev holds a read pattern next does not: the ACL may have
// narrowed. A pattern swapped for a wider one counts too, which costs a prune, never a copy.
func lostPatterns(prev, next wire.ACLRecord) bool {
	for _, p := range prev.AllowSubscribe {
		if !slices.Contains(next.AllowSubscribe, p) {
			return true
		}
	}
	return false
}
