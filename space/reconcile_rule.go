package space

import (
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/wire"
)

// The reconciliation rule (docs/hostile-agents.md "Nothing outlives its grants"). JetStream
// does not record who created a consumer, and a grant pins a consumer's name and filter, never
// the rest of its config, so a consumer is judged by its name, its stream and its config
// against the registry as it is now. A consumer is kept only when it is exactly one of these:
//
//   - fanout on CHAT and reader on INBOX: the delivery service's own. Only the delivery
//     identity can create them (every other profile is denied), and losing one stops durable
//     delivery, so they are never touched.
//   - dm_<id> on DM, dlv_<id> on DLV: id is an agent that is not revoked, and the config is the
//     wire spec's (filter, explicit ack, ack wait, no deliver subject, no inactive threshold, no
//     throttling or header-only knob). svc_<role> on TASK likewise for a role such an agent
//     holds. A bind-only durable whose config drifted is restored to the spec; one whose owner
//     was revoked is deleted. An expired credential keeps its durables: the broker refuses it
//     already, nobody else may bind them, and a re-mint of the same key finds its queue where
//     it left it instead of every retained DM again.
//   - chathist_<id> on CHAT: id is active, the consumer is transient (below), pull, with one
//     filter that the owner's current read ACL covers (an observer's or admin's covers all
//     chat). A re-mint that narrows the ACL therefore takes away every history consumer
//     outside it. No other name on CHAT is anyone's: every profile creates CHAT consumers
//     under its own chathist_<id> only (wire's grants).
//   - dmhist_<id> on DM: id is an active admin, the consumer is transient and pull, its one
//     filter inside the DM subtree.
//   - any consumer on a KV stream (presence and registry watches): transient, and either pull
//     or pushing into the inbox of an active identity whose own current grants let it create
//     that watch. The KV clients watch with push consumers, so a deliver subject cannot be
//     refused outright; pointing one at somebody who may not read the bucket can.
//
// Transient means an inactive threshold above zero and at most
// wire.MaxTransientInactiveThreshold: the server deletes it soon after its reader goes, so a
// re-mint never leaves it reading for long, and nobody can park consumers that count against
// a stream's limit. No consumer of a message stream may push: cotal and the SPEC §8 binding
// read every message stream by pull, and a push consumer delivers to whatever subject its
// creator named, past every read grant of the identity that subscribes there.
//
// Everything else on the space's streams is deleted.

// action is what the reconciler does with one consumer.
type action int

const (
	keep action = iota
	remove
	restore // delete and recreate from the wire spec
)

// decision is the action on one consumer, with the spec to restore and, for the log, why
// and whose it was (an instance id or role, never a secret).
type decision struct {
	action action
	spec   wire.ConsumerSpec
	why    string
	owner  string
	// ended: the consumer is removed because the credential it served was revoked or expired
	// (its owner is still in the registry), the expected end of a credential's consumers and
	// no sign of anyone overstepping.
	ended bool
}

// registryView is what the rule knows of the registry, by sanitized id token: the active
// identities, the agents not revoked (owners of bind-only durables) and the roles they hold,
// and each active identity's current permissions by inbox prefix.
type registryView struct {
	names   wire.Names
	ackWait time.Duration
	active  map[string]provisioner.Record
	agents  map[string]provisioner.Record
	roles   map[string]bool
	inboxes map[string]wire.Permissions // inbox prefix -> that identity's permissions
	// ended are the registry's identities that can no longer connect (revoked or expired),
	// by sanitized id token and by inbox prefix, with the roles of the revoked agents: what
	// a revocation or an expiry leaves for the reconciler to clear (decision.ended).
	ended        map[string]provisioner.Record
	endedInboxes map[string]string // inbox prefix -> id
	endedRoles   map[string]bool
}

// newRegistryView builds the rule's view of recs at now. deliveryInbox is the inbox prefix of the
// space's delivery connection, whose watches are its own; empty before the delivery service
// starts, when every watch is a previous run's.
func newRegistryView(n wire.Names, recs []provisioner.Record, now time.Time, ackWait time.Duration, deliveryInbox string) registryView {
	r := registryView{names: n, ackWait: ackWait, active: map[string]provisioner.Record{},
		agents: map[string]provisioner.Record{}, roles: map[string]bool{}, inboxes: map[string]wire.Permissions{},
		ended: map[string]provisioner.Record{}, endedInboxes: map[string]string{}, endedRoles: map[string]bool{}}
	if deliveryInbox != "" {
		r.inboxes[deliveryInbox] = wire.DeliveryPermissions(n, deliveryInbox)
	}
	for _, rec := range recs {
		if rec.Profile == provisioner.ProfileAgent && !rec.Revoked {
			r.agents[wire.Sanitize(rec.ID)] = rec
			if rec.Grants.Role != "" {
				r.roles[wire.Sanitize(rec.Grants.Role)] = true
			}
		}
		if !rec.Active(now) {
			r.ended[wire.Sanitize(rec.ID)] = rec
			r.endedInboxes[wire.InboxPrefix(rec.ID)] = rec.ID
			if rec.Profile == provisioner.ProfileAgent && rec.Revoked && rec.Grants.Role != "" {
				r.endedRoles[wire.Sanitize(rec.Grants.Role)] = true
			}
			continue
		}
		r.active[wire.Sanitize(rec.ID)] = rec
		if p, ok := identityPermissions(n, rec); ok {
			r.inboxes[wire.InboxPrefix(rec.ID)] = p
		}
	}
	return r
}

// identityPermissions are the wire permissions of rec's current credential.
func identityPermissions(n wire.Names, rec provisioner.Record) (wire.Permissions, bool) {
	switch rec.Profile {
	case provisioner.ProfileAgent:
		g := rec.Grants
		return wire.AgentPermissions(n, rec.ID, wire.AgentScope{AllowSubscribe: g.AllowSubscribe,
			AllowPublish: g.AllowPublish, Role: g.Role}), true
	case provisioner.ProfileObserver:
		return wire.ObserverPermissions(n, rec.ID), true
	case provisioner.ProfileAdmin:
		return wire.AdminPermissions(n, rec.ID), true
	}
	return wire.Permissions{}, false
}

// decide applies the rule to one consumer of stream, named name, with config cfg.
func (r registryView) decide(stream, name string, cfg jetstream.ConsumerConfig) decision {
	n := r.names
	switch stream {
	case n.ChatStream():
		return r.decideChat(name, cfg)
	case n.DMStream():
		if tok, ok := strings.CutPrefix(name, "dm_"); ok {
			return r.decideBound(tok, cfg, func(id string) wire.ConsumerSpec { return n.DMConsumerSpec(id, r.ackWait) })
		}
		if tok, ok := strings.CutPrefix(name, "dmhist_"); ok {
			return r.decideDMHistory(tok, cfg)
		}
	case n.DLVStream():
		if tok, ok := strings.CutPrefix(name, "dlv_"); ok {
			return r.decideBound(tok, cfg, func(id string) wire.ConsumerSpec { return n.DLVConsumerSpec(id, r.ackWait) })
		}
	case n.TaskStream():
		if role, ok := strings.CutPrefix(name, "svc_"); ok {
			return r.decideRole(role, cfg)
		}
	case n.InboxStream():
		if name == wire.ReaderConsumer {
			return decision{action: keep}
		}
	default:
		return r.decideWatch(stream, cfg)
	}
	return decision{action: remove, why: "not a consumer of the layout"}
}

func (r registryView) decideChat(name string, cfg jetstream.ConsumerConfig) decision {
	if name == wire.FanoutConsumer {
		return decision{action: keep}
	}
	if why := transientPull(cfg); why != "" {
		return decision{action: remove, why: why}
	}
	tok, ok := strings.CutPrefix(name, "chathist_")
	if !ok {
		return decision{action: remove, why: "not a consumer of the layout"}
	}
	rec, ok := r.active[tok]
	if !ok {
		return r.ownerGone("its owner is not an active identity", tok)
	}
	if !r.readsChat(rec, cfg) {
		return decision{action: remove, why: "its filter is outside the owner's current read ACL", owner: rec.ID}
	}
	return decision{action: keep}
}

// readsChat reports whether cfg's one filter is a chat subset rec may read now.
func (r registryView) readsChat(rec provisioner.Record, cfg jetstream.ConsumerConfig) bool {
	f, ok := oneFilter(cfg)
	if !ok {
		return false
	}
	if rec.Profile != provisioner.ProfileAgent {
		return server.SubjectMatchesFilter(f, r.names.Prefix()+".chat.>")
	}
	for _, ch := range rec.Grants.AllowSubscribe {
		if server.SubjectMatchesFilter(f, r.names.ChatFilter(ch)) {
			return true
		}
	}
	return false
}

func (r registryView) decideDMHistory(tok string, cfg jetstream.ConsumerConfig) decision {
	rec, ok := r.active[tok]
	if !ok || rec.Profile != provisioner.ProfileAdmin {
		return r.ownerGone("its owner is not an active admin", tok)
	}
	if why := transientPull(cfg); why != "" {
		return decision{action: remove, why: why, owner: rec.ID}
	}
	if f, ok := oneFilter(cfg); !ok || !server.SubjectMatchesFilter(f, r.names.Prefix()+".inst.>") {
		return decision{action: remove, why: "its filter is outside the DM subtree", owner: rec.ID}
	}
	return decision{action: keep}
}

// decideBound decides on dm_<tok> or dlv_<tok>, whose spec spec(id) gives.
func (r registryView) decideBound(tok string, cfg jetstream.ConsumerConfig, spec func(id string) wire.ConsumerSpec) decision {
	rec, ok := r.agents[tok]
	if !ok {
		return r.ownerGone("its owner is not an agent, or was revoked", tok)
	}
	return bound(spec(rec.ID), cfg, rec.ID)
}

// ownerGone removes the consumer of tok, an id token that is no active owner; ended when the
// registry still holds tok as a revoked or expired credential.
func (r registryView) ownerGone(why, tok string) decision {
	j := decision{action: remove, why: why, owner: tok}
	if rec, ok := r.ended[tok]; ok {
		j.owner, j.ended = rec.ID, true
	}
	return j
}

func (r registryView) decideRole(role string, cfg jetstream.ConsumerConfig) decision {
	if !r.roles[role] {
		return decision{action: remove, why: "no agent that is not revoked holds the role", owner: role, ended: r.endedRoles[role]}
	}
	return bound(r.names.SvcConsumerSpec(role, r.ackWait), cfg, role)
}

// bound keeps a bind-only durable whose config is spec's and restores any other.
func bound(spec wire.ConsumerSpec, cfg jetstream.ConsumerConfig, owner string) decision {
	if why := drift(spec, cfg); why != "" {
		return decision{action: restore, spec: spec, why: why, owner: owner}
	}
	return decision{action: keep}
}

// drift says how cfg differs from spec in anything that changes what the consumer reads,
// where it delivers, or whether it keeps what it holds; "" when it does not. Fields the spec
// leaves to the server's default (deliver policy, max ack pending) only pace the reads.
func drift(spec wire.ConsumerSpec, cfg jetstream.ConsumerConfig) string {
	f, ok := oneFilter(cfg)
	switch {
	case !ok || f != spec.Filter:
		return "its filter was changed"
	case cfg.DeliverSubject != "" || cfg.DeliverGroup != "":
		return "it was made a push consumer"
	case cfg.AckPolicy != jetstream.AckExplicitPolicy || cfg.AckWait != spec.AckWait:
		return "its acknowledgement was changed"
	case cfg.InactiveThreshold != 0:
		return "it was given an inactive threshold"
	case cfg.MaxDeliver > 0 || len(cfg.BackOff) > 0 || cfg.RateLimit != 0 || cfg.HeadersOnly ||
		cfg.SampleFrequency != "" || cfg.PauseUntil != nil && cfg.PauseUntil.After(time.Now()):
		return "it was throttled, paused or cut to headers"
	}
	return ""
}

func (r registryView) decideWatch(stream string, cfg jetstream.ConsumerConfig) decision {
	if !transient(cfg) {
		return decision{action: remove, why: "a watch that is not transient"}
	}
	if cfg.DeliverSubject == "" {
		return decision{action: keep}
	}
	create := "$JS.API.CONSUMER.CREATE." + stream + ".x"
	for inbox, p := range r.inboxes {
		if server.SubjectMatchesFilter(cfg.DeliverSubject, inbox+".>") && mayPublish(p, create) {
			return decision{action: keep}
		}
	}
	for inbox, id := range r.endedInboxes {
		if server.SubjectMatchesFilter(cfg.DeliverSubject, inbox+".>") {
			return decision{action: remove, why: "it pushes to a revoked or expired identity", owner: id, ended: true}
		}
	}
	return decision{action: remove, why: "it pushes to an identity that may not watch the bucket"}
}

// transientPull is "" for a transient pull consumer, else why it is not one.
func transientPull(cfg jetstream.ConsumerConfig) string {
	switch {
	case cfg.DeliverSubject != "":
		return "a push consumer on a message stream"
	case !transient(cfg):
		return "a durable where only transient consumers belong"
	}
	return ""
}

func transient(cfg jetstream.ConsumerConfig) bool {
	return cfg.InactiveThreshold > 0 && cfg.InactiveThreshold <= wire.MaxTransientInactiveThreshold
}

// oneFilter is cfg's filter when it has exactly one.
func oneFilter(cfg jetstream.ConsumerConfig) (string, bool) {
	switch {
	case len(cfg.FilterSubjects) == 1 && cfg.FilterSubject == "":
		return cfg.FilterSubjects[0], true
	case len(cfg.FilterSubjects) == 0 && cfg.FilterSubject != "":
		return cfg.FilterSubject, true
	}
	return "", false
}

// mayPublish reports whether p lets its holder publish on subject: an allow matches and no
// deny does, as the broker decides.
func mayPublish(p wire.Permissions, subject string) bool {
	for _, d := range p.Pub.Deny {
		if server.SubjectMatchesFilter(subject, d) {
			return false
		}
	}
	for _, a := range p.Pub.Allow {
		if server.SubjectMatchesFilter(subject, a) {
			return true
		}
	}
	return false
}
