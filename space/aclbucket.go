package space

import (
	"context"
	"log/slog"
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
// delivery.ACLSource. It lags the registry by one watch delivery: an entry handed over in
// that moment is judged by the previous record.
type bucketACL struct {
	names wire.Names
	conn  *nats.Conn
	log   *slog.Logger

	mu   sync.RWMutex
	byID map[string]wire.ACLRecord
}

func newBucketACL(n wire.Names, conn *nats.Conn, log *slog.Logger) *bucketACL {
	return &bucketACL{names: n, conn: conn, log: log.With("space", n.Space()), byID: map[string]wire.ACLRecord{}}
}

// ReadACL returns id's ACL record; false when the bucket holds none that decodes.
func (a *bucketACL) ReadACL(id string) (wire.ACLRecord, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	rec, ok := a.byID[wire.Sanitize(id)]
	return rec, ok
}

// watch follows the bucket until ctx ends, calling loaded once it holds every record the
// bucket had when the first watch began. A watch that stops is opened again.
func (a *bucketACL) watch(ctx context.Context, loaded func()) {
	js, err := jetstream.New(a.conn)
	if err != nil {
		a.log.Error("the ACL records cannot be read", "err", err)
		return
	}
	var once sync.Once
	for ctx.Err() == nil {
		if err := a.follow(ctx, js, func() { once.Do(loaded) }); err != nil && ctx.Err() == nil {
			a.log.Warn("following the ACL records; trying again", "err", err)
		}
		pause(ctx, leaseTick)
	}
}

// follow runs one watch of the bucket until it ends.
func (a *bucketACL) follow(ctx context.Context, js jetstream.JetStream, loaded func()) error {
	kv, err := js.KeyValue(ctx, a.names.ACLBucket())
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
		rec, err := wire.DecodeACLRecord(e.Value())
		a.mu.Lock()
		if e.Operation() != jetstream.KeyValuePut || err != nil {
			delete(a.byID, e.Key())
		} else {
			a.byID[e.Key()] = *rec
		}
		a.mu.Unlock()
	}
	return nil
}
