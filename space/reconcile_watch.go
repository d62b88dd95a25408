package space

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// apiAudit is where the broker reports each JetStream API call of the account, with its
// request and response (nats-server's JSAuditAdvisory).
const apiAudit = "$JS.EVENT.ADVISORY.API"

// createdQueue bounds the consumer creates waiting for a check; past it a create is left to
// the next periodic pass.
const createdQueue = 256

// created is one consumer a JetStream API call created or updated, with the config the server
// answered.
type created struct {
	stream, name string
	config       jetstream.ConsumerConfig
	// creator is the user key of the identity whose request created it, as the API audit
	// names it (wire.SharedServiceSubject); empty if the audit does not say.
	creator string
}

// watchCreates records the creator of every consumer of the watched buckets (watchcap.go) and
// queues every successful consumer create or update in rt's account on out, so
// the rule judges it within milliseconds rather than at the next periodic pass: a push
// consumer made under one's own name (which no grant can refuse) delivers nothing for long.
// Consumer updates send no advisory of their own, hence the API audit rather than the
// CONSUMER.CREATED advisory. The audit also carries other answers, message gets among them;
// the handler decodes the subject first and ignores everything but consumer creates.
func watchCreates(rt *spaceRuntime, out chan<- created) (*nats.Subscription, error) {
	return rt.prov.Subscribe(apiAudit, func(msg *nats.Msg) {
		if !auditsConsumerCreate(msg.Data) {
			return
		}
		var audit struct {
			Subject  string `json:"subject"`
			Response string `json:"response"`
			Client   struct {
				User string `json:"user"`
			} `json:"client"`
		}
		if json.Unmarshal(msg.Data, &audit) != nil || !consumerCreate(audit.Subject) {
			return
		}
		var resp struct {
			jetstream.ConsumerInfo
			Error *jetstream.APIError `json:"error"`
		}
		if json.Unmarshal([]byte(audit.Response), &resp) != nil || resp.Error != nil || resp.Name == "" {
			return
		}
		// The creator is recorded here, before the queue, so a create the queue drops still
		// counts against its creator's watch cap at the next check or pass.
		if audit.Client.User != "" && slices.Contains(rt.watchedStreams(), resp.Stream) {
			rt.watches.record(resp.Stream, resp.Name, audit.Client.User)
		}
		select {
		case out <- created{stream: resp.Stream, name: resp.Name, config: resp.Config, creator: audit.Client.User}:
		default:
		}
	})
}

// auditedCreates are the consumer create forms as an audit's subject field reads in
// nats-server's compact JSON.
var auditedCreates = [][]byte{
	[]byte(`"subject":"$JS.API.CONSUMER.CREATE.`),
	[]byte(`"subject":"$JS.API.CONSUMER.DURABLE.CREATE.`),
}

// auditsConsumerCreate reports whether an audit may be of a consumer create. Every JetStream
// API call of the account is audited with its whole request and response, and most are no
// create, so they are passed over before being decoded. Inside the request and response
// strings quotes are escaped, so only the audit's own subject field can match.
func auditsConsumerCreate(data []byte) bool {
	for _, form := range auditedCreates {
		if bytes.Contains(data, form) {
			return true
		}
	}
	return false
}

// consumerCreate reports whether subject is one of the JetStream API's consumer create forms.
func consumerCreate(subject string) bool {
	return strings.HasPrefix(subject, "$JS.API.CONSUMER.CREATE.") ||
		strings.HasPrefix(subject, "$JS.API.CONSUMER.DURABLE.CREATE.")
}

// checkCreated judges one created consumer against the registry now and acts on it.
func (m *Mesh) checkCreated(life context.Context, rt *spaceRuntime, c created) {
	if !rt.ownsStream(c.stream) {
		return
	}
	ctx, cancel := context.WithTimeout(life, reconcileTimeout)
	defer cancel()
	rt.mintMu.Lock()
	defer rt.mintMu.Unlock()
	recs, err := m.store.List(rt.name)
	if err != nil {
		m.log.Error("checking a new consumer failed", "space", rt.name, "err", err)
		return
	}
	r := newRegistryView(rt.names, recs, time.Now(), m.opts.AckWait, rt.deliveryInbox)
	j := r.decide(c.stream, c.name, c.config)
	if j.action == keep {
		if c.creator == "" || !slices.Contains(rt.watchedStreams(), c.stream) {
			return
		}
		if err := m.capWatches(ctx, rt, c.stream, c.creator, recs); err != nil {
			rt.reconciled.failures.Add(1)
			m.log.Error("capping an identity's watches failed", "space", rt.name, "err", err)
		}
		return
	}
	// Made just now for an identity that can no longer connect: not what its end left behind.
	j.ended = false
	var rep ReconcileReport
	if err := m.apply(ctx, rt, c.stream, c.name, j, &rep); err != nil {
		rt.reconciled.failures.Add(1)
		m.log.Error("acting on a new consumer failed", "space", rt.name, "err", err)
	}
	rt.reconciled.deleted.Add(int64(rep.Deleted))
	rt.reconciled.restored.Add(int64(rep.Restored))
}

// ownsStream reports whether stream is one of the space's own.
func (rt *spaceRuntime) ownsStream(stream string) bool {
	for _, s := range rt.names.Streams() {
		if s.Name == stream {
			return true
		}
	}
	return false
}
