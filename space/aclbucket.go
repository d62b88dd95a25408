package space

import (
	"context"
	"log/slog"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/wire"
)

// bucketACL is the read-ACL source of a cluster node that runs a space's backstop without the
// key store: the cotal_acl_<s> records, which the key-store node's provisioner writes at every
// mint, re-mint and revoke before it hands the credential out, and rewrites from its registry
// at start. Only the provisioner identity may write them, and since the agents live in their
// own account no PubAck of theirs can land on a key (wire/accounts.go); a record that does
// not decode strictly (wire.DecodeACLRecord) still counts as none. It implements
// delivery.ACLSource, and delivery.NameSource from cotal_identities_<s>, written the same way,
// so @mentions resolve by minted names there too. It lags the registry by one watch delivery:
// an entry handed over in that moment is judged by the previous record.
type bucketACL struct {
	names wire.Names
	conn  *nats.Conn
	log   *slog.Logger

	mu     sync.RWMutex
	byID   map[string]wire.ACLRecord
	minted map[string]string   // id → the name its active credential was minted with
	byName map[string][]string // wire.NameKey of a name → the active ids minted with it
}

func newBucketACL(n wire.Names, conn *nats.Conn, log *slog.Logger) *bucketACL {
	return &bucketACL{names: n, conn: conn, log: log.With("space", n.Space()), byID: map[string]wire.ACLRecord{},
		minted: map[string]string{}, byName: map[string][]string{}}
}

// ReadACL returns id's ACL record; false when the bucket holds none that decodes.
func (a *bucketACL) ReadACL(id string) (wire.ACLRecord, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	rec, ok := a.byID[wire.Sanitize(id)]
	return rec, ok
}

// MintedName returns the name id's active credential was minted with.
func (a *bucketACL) MintedName(id string) (string, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	name, ok := a.minted[id]
	return name, ok
}

// MintedAs returns the active ids minted with name, compared case-insensitively.
func (a *bucketACL) MintedAs(name string) []string {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.byName[wire.NameKey(name)]
}

// watch follows both buckets until ctx ends, calling loaded once it holds every ACL record
// the bucket had when the first watch began. A watch that stops is opened again.
func (a *bucketACL) watch(ctx context.Context, loaded func()) {
	js, err := jetstream.New(a.conn)
	if err != nil {
		a.log.Error("the ACL records cannot be read", "err", err)
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { a.keep(ctx, js, a.names.IdentitiesBucket(), func() {}, a.applyIdentity) })
	a.keep(ctx, js, a.names.ACLBucket(), loaded, a.applyACL)
	wg.Wait()
}

// keep follows bucket with apply until ctx ends, opening a watch that stops again; loaded is
// called once, after the first watch delivered what the bucket held.
func (a *bucketACL) keep(ctx context.Context, js jetstream.JetStream, bucket string, loaded func(), apply func(jetstream.KeyValueEntry)) {
	var once sync.Once
	for ctx.Err() == nil {
		if err := a.follow(ctx, js, bucket, func() { once.Do(loaded) }, apply); err != nil && ctx.Err() == nil {
			a.log.Warn("following a registry bucket; trying again", "bucket", bucket, "err", err)
		}
		pause(ctx, leaseTick)
	}
}

// follow runs one watch of bucket until it ends.
func (a *bucketACL) follow(ctx context.Context, js jetstream.JetStream, bucket string, loaded func(), apply func(jetstream.KeyValueEntry)) error {
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		return err
	}
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = w.Stop() }()
	for e := range w.Updates() {
		if e == nil {
			loaded()
			continue
		}
		apply(e)
	}
	return nil
}

// applyACL takes one ACL record, or its removal.
func (a *bucketACL) applyACL(e jetstream.KeyValueEntry) {
	rec, err := wire.DecodeACLRecord(e.Value())
	a.mu.Lock()
	defer a.mu.Unlock()
	if e.Operation() != jetstream.KeyValuePut || err != nil {
		delete(a.byID, e.Key())
		return
	}
	a.byID[e.Key()] = *rec
}

// applyIdentity takes one identity or name record, or its removal; a record that does not
// decode strictly counts as none.
func (a *bucketACL) applyIdentity(e jetstream.KeyValueEntry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	put := e.Operation() == jetstream.KeyValuePut
	if strings.HasPrefix(e.Key(), "name.") {
		rec, err := wire.DecodeNameRecord(e.Value())
		if !put || err != nil {
			delete(a.byName, e.Key())
			return
		}
		a.byName[e.Key()] = rec.IDs
		return
	}
	rec, err := wire.DecodeIdentityRecord(e.Value())
	if !put || err != nil || !rec.Active {
		delete(a.minted, e.Key())
		return
	}
	a.minted[e.Key()] = rec.Name
}
