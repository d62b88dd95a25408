package cli

import (
	"context"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cotal-go/cotal/space"
)

// meshLog is the slog.Handler of `cotal up`: it passes the mesh's log through, except that it
// speaks of agents by name, not by key. A nats-server refusal line ("…"ACCOUNT/main/jwt:UID" -
// Publish Violation - Subject "…"") becomes one line naming the agent and what was refused,
// without the account key; a record carrying an instance id gets the credential's name; and the
// per-stream lines nats-server writes while restoring its store are counted at debug, to be
// summed up in one line once the mesh is up (recovered).
type meshLog struct {
	inner slog.Handler
	names *nameBook
	rec   *recovery
}

func newMeshLog(inner slog.Handler) *meshLog {
	return &meshLog{inner: inner, names: &nameBook{}, rec: &recovery{start: time.Now()}}
}

// Enabled is the inner handler's: meshLog moves records only down to debug, never up.
func (h *meshLog) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

// Handle rewrites r as the type comment says and hands it on.
func (h *meshLog) Handle(ctx context.Context, r slog.Record) error {
	r = h.rec.note(r)
	if refusal, ok := h.refusal(r); ok {
		r = refusal
	} else {
		r = h.named(r)
	}
	if !h.inner.Enabled(ctx, r.Level) {
		return nil
	}
	return h.inner.Handle(ctx, r)
}

// WithAttrs and WithGroup share the name book and the recovery count with h.
func (h *meshLog) WithAttrs(as []slog.Attr) slog.Handler {
	return &meshLog{inner: h.inner.WithAttrs(as), names: h.names, rec: h.rec}
}

func (h *meshLog) WithGroup(name string) slog.Handler {
	return &meshLog{inner: h.inner.WithGroup(name), names: h.names, rec: h.rec}
}

// instanceID is a user nkey, the id of an instance (SPEC §3), anywhere in a text.
var instanceID = regexp.MustCompile(`\bU[A-Z2-7]{55}\b`)

// idKeys are the attributes that carry an instance id in the mesh's and delivery's records.
var idKeys = map[string]bool{"id": true, "member": true, "owner": true, "identity": true}

// named adds the credential's name to a record that carries an instance id and no name; a
// record with both ("minted a credential") teaches the book the name. An info record about
// one of the commands' own cli-* identities goes to debug.
func (h *meshLog) named(r slog.Record) slog.Record {
	var id, name string
	hasName := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "name" {
			hasName, name = true, a.Value.String()
		} else if idKeys[a.Key] && id == "" {
			id = instanceID.FindString(a.Value.String())
		}
		return true
	})
	if id == "" {
		return r
	}
	out := r
	if hasName {
		h.names.learn(id, name)
	} else {
		name = h.names.name(id)
		out = r.Clone()
		out.AddAttrs(slog.String("name", name))
	}
	if isOwnName(name) && out.Level == slog.LevelInfo {
		// The commands' own identities are hidden here as in auth list, who and status.
		out.Level = slog.LevelDebug
	}
	return out
}

// refusalKinds turn nats-server's refusal markers into what was refused, as a person says it.
var refusalKinds = []struct{ marker, one, more string }{
	{"Publish Violation", "a publish outside its grants", "publishes outside its grants"},
	{"Subscription Violation", "a subscription outside its grants", "subscriptions outside its grants"},
	{"Maximum Payload Violation", "a message over the payload limit", "messages over the payload limit"},
	{"maximum account active connections exceeded", "a connection past the space's connection limit",
		"connections past the space's connection limit"},
}

var (
	refusalSubject = regexp.MustCompile(`Subject "([^"]*)"`)
	refusalAddr    = regexp.MustCompile(`^(\S+) - cid:`)
	// refusalSpace is the account name before the user in "ACCOUNT/NAME/jwt:USER": an agent's
	// account is named for its space.
	refusalSpace = regexp.MustCompile(`([^/"\s]+)/jwt:U`)
)

// refusal rewrites a nats-server client refusal line, or the broker's summary of the ones it
// held back ("client refusals held back: KIND", with identity, count and the last line), into
// a warning naming the agent. ok is false for any other record.
func (h *meshLog) refusal(r slog.Record) (slog.Record, bool) {
	raw := r.Message
	kindText, held := strings.CutPrefix(r.Message, "client refusals held back: ")
	var count, within slog.Attr
	if held {
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "last":
				raw = a.Value.String()
			case "count":
				count = a
			case "within":
				within = a
			}
			return true
		})
	}
	msg := ""
	for _, k := range refusalKinds {
		if strings.Contains(kindText, k.marker) {
			msg = "refused " + k.one
			if held {
				msg = "refused more " + k.more
			}
			break
		}
	}
	if msg == "" {
		return r, false
	}
	out := slog.NewRecord(r.Time, slog.LevelWarn, msg, r.PC)
	if m := refusalSpace.FindStringSubmatch(raw); m != nil {
		out.AddAttrs(slog.String("space", m[1]))
	}
	if id := instanceID.FindString(raw); id != "" {
		out.AddAttrs(slog.String("name", h.names.name(id)), slog.String("id", id))
	}
	if m := refusalSubject.FindStringSubmatch(raw); m != nil {
		out.AddAttrs(slog.String("subject", m[1]))
	}
	if m := refusalAddr.FindStringSubmatch(raw); m != nil {
		out.AddAttrs(slog.String("from", m[1]))
	}
	if held {
		out.AddAttrs(count, within)
	}
	return out, true
}

// nameBook maps instance ids to credential names, read from the mesh's registry once the mesh
// is up and again when an id is not known yet, at most once a second.
type nameBook struct {
	mu      sync.Mutex
	mesh    *space.Mesh
	byID    map[string]string
	fetched time.Time
}

// nameRefresh is how often an unknown id may make the book re-read the registry.
const nameRefresh = time.Second

// use lets the book read m's registry.
func (b *nameBook) use(m *space.Mesh) {
	b.mu.Lock()
	b.mesh = m
	b.mu.Unlock()
}

// learn records that id's credential is called name.
func (b *nameBook) learn(id, name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.byID == nil {
		b.byID = map[string]string{}
	}
	b.byID[id] = name
}

// name is id's credential name, or "unknown" when no space of the mesh has minted it.
func (b *nameBook) name(id string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n, ok := b.byID[id]; ok {
		return n
	}
	if b.mesh == nil || time.Since(b.fetched) < nameRefresh {
		return "unknown"
	}
	b.fetched = time.Now()
	if b.byID == nil {
		b.byID = map[string]string{}
	}
	for _, s := range b.mesh.Spaces() {
		recs, err := b.mesh.Credentials(s)
		if err != nil {
			continue // an open mesh has no registry
		}
		for _, rec := range recs {
			b.byID[rec.ID] = rec.Name
		}
	}
	if n, ok := b.byID[id]; ok {
		return n
	}
	return "unknown"
}

// restoreLine and recoverLine are the per-stream lines nats-server writes while it restores
// its store; startRestore starts each.
var (
	restoreLine  = regexp.MustCompile(`Restored (\d+) messages for stream '[^']*'`)
	recoverLine  = regexp.MustCompile(`Recovering (\d+) consumers for stream`)
	startRestore = "Starting restore for stream"
)

// recovery counts what nats-server restored while the mesh started, and the warnings logged
// meanwhile, for the one line recovered writes.
type recovery struct {
	mu                           sync.Mutex
	start                        time.Time
	done                         bool
	streams, messages, consumers int
	warnings                     int
}

// note counts r when the mesh is still starting, and returns it at debug when it is one of
// nats-server's per-stream restore lines.
func (c *recovery) note(r slog.Record) slog.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return r
	}
	restored, recovering := restoreLine.FindStringSubmatch(r.Message), recoverLine.FindStringSubmatch(r.Message)
	switch {
	case restored != nil:
		n, _ := strconv.Atoi(restored[1])
		c.streams++
		c.messages += n
	case recovering != nil:
		n, _ := strconv.Atoi(recovering[1])
		c.consumers += n
	case strings.Contains(r.Message, startRestore):
	default:
		if r.Level >= slog.LevelWarn {
			c.warnings++
		}
		return r
	}
	out := slog.NewRecord(r.Time, slog.LevelDebug, strings.TrimSpace(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool { out.AddAttrs(a); return true })
	return out
}

// recovered ends the count and, when the mesh restored a store, logs one line saying what it
// restored, how long starting took and how many warnings came meanwhile.
// The line is logged after the lock is released, since it passes through note.
func (c *recovery) recovered(log *slog.Logger) {
	c.mu.Lock()
	was := c.done
	c.done = true
	attrs := []any{"streams", c.streams, "messages", c.messages, "consumers", c.consumers,
		"warnings", c.warnings, "took", time.Since(c.start).Round(time.Millisecond)}
	restored := c.streams > 0
	c.mu.Unlock()
	if !was && restored {
		log.Info("recovered the stored state", attrs...)
	}
}
