package provisioner

import (
	"fmt"

	"github.com/cotal-go/cotal/wire"
	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

// Profile names a permission shape (SPEC §9, Appendix B).
type Profile string

// The user-facing profiles of SPEC Appendix B. Appendix B's allow-all manager profile is not
// offered: its duties are split between the two narrow infrastructure profiles below.
const (
	// ProfileAgent posts to its allowPublish channels and reads within allowSubscribe.
	ProfileAgent Profile = "agent"
	// ProfileObserver reads all chat, CHAT history, presence and the channel registry.
	ProfileObserver Profile = "observer"
	// ProfileAdmin is observer plus the whole space's live tap and DM history.
	ProfileAdmin Profile = "admin"
)

// The infrastructure profiles, minted only by InfraCredential for cotal's own in-process
// connections.
const (
	// ProfileProvisioner creates the space's streams, buckets and bind-only durables and
	// writes the channel registry and ACL records.
	ProfileProvisioner Profile = "provisioner"
	// ProfileDelivery runs the durable backstop (LAYOUT.md): fan-out, trusted reader and the
	// `delivery` control service.
	ProfileDelivery Profile = "delivery"
)

// Valid reports whether p is one of the Profile constants.
func (p Profile) Valid() bool {
	switch p {
	case ProfileAgent, ProfileObserver, ProfileAdmin, ProfileProvisioner, ProfileDelivery:
		return true
	}
	return false
}

// infra reports whether p is an infrastructure profile.
func (p Profile) infra() bool { return p == ProfileProvisioner || p == ProfileDelivery }

// Permissions returns the exact NATS permissions of profile for the instance id (a user
// public key) in the space names describes: SPEC Appendix B plus LAYOUT.md's additions.
// Grants apply to ProfileAgent only; any grant or role given to another profile fails with
// ErrGrantsNotAllowed. It is a pure function of its arguments.
func Permissions(profile Profile, names wire.Names, id string, g Grants) (jwt.Permissions, error) {
	if names.Space() == "" {
		return jwt.Permissions{}, fmt.Errorf("%w: the space name is empty", ErrInvalidRequest)
	}
	if !nkeys.IsValidPublicUserKey(id) {
		return jwt.Permissions{}, fmt.Errorf("%w: id %q is not a user public key", ErrInvalidGrant, id)
	}
	if profile != ProfileAgent && !g.IsZero() {
		return jwt.Permissions{}, fmt.Errorf("%w: the %s profile takes no subscribe, allowSubscribe, allowPublish or role (--subscribe, --allow-subscribe, --allow-publish and --role apply only to the agent profile)", ErrGrantsNotAllowed, profile)
	}
	var p jwt.Permissions
	// SPEC §9 item 1: replies, pull responses and KV watch deliveries ride the per-identity
	// inbox. Every profile but delivery may call $JS.API.INFO, which clients use to detect
	// JetStream; the delivery service never does, so its credential does without.
	p.Sub.Allow.Add(wire.InboxPrefix(id) + ".>")
	if profile != ProfileDelivery {
		p.Pub.Allow.Add("$JS.API.INFO")
	}
	switch profile {
	case ProfileAgent:
		g = g.withDefaults()
		if err := g.validate(); err != nil {
			return jwt.Permissions{}, err
		}
		agentPermissions(&p, names, id, g)
	case ProfileObserver:
		observerPermissions(&p, names)
	case ProfileAdmin:
		adminPermissions(&p, names)
	case ProfileProvisioner:
		provisionerPermissions(&p, names)
	case ProfileDelivery:
		deliveryPermissions(&p, names)
	default:
		return jwt.Permissions{}, fmt.Errorf("%w %q: use agent, observer or admin", ErrUnknownProfile, profile)
	}
	return p, nil
}

// Subject builders for the JetStream API, KV and ack subjects the profiles grant.

func streamAPI(verb, stream string) string { return "$JS.API.STREAM." + verb + "." + stream }

func consumerAPI(verb, stream, consumer string) string {
	return "$JS.API.CONSUMER." + verb + "." + stream + "." + consumer
}

// ackSubject covers every ack, nak, term and in-progress reply of one consumer.
func ackSubject(stream, consumer string) string { return "$JS.ACK." + stream + "." + consumer + ".>" }

// kvKeys is the write subject of every key of a bucket.
func kvKeys(bucket string) string { return "$KV." + bucket + ".>" }

// createDenies are the three consumer-create forms that accept a consumer name or filter
// outside the subject (SPEC §9 item 3): bare, extended and legacy durable.
func createDenies(stream string) []string {
	return []string{
		"$JS.API.CONSUMER.CREATE." + stream,
		"$JS.API.CONSUMER.CREATE." + stream + ".>",
		"$JS.API.CONSUMER.DURABLE.CREATE." + stream + ".>",
	}
}

// kvGetGrants let a client bind a bucket (STREAM.INFO) and get a key by subject or by
// revision: Direct Get when the bucket allows it, else STREAM.MSG.GET.
func kvGetGrants(bucket string) []string {
	s := wire.KVStream(bucket)
	return []string{
		streamAPI("INFO", s),
		"$JS.API.DIRECT.GET." + s,
		"$JS.API.DIRECT.GET." + s + ".>",
		streamAPI("MSG.GET", s),
	}
}

// kvReadGrants are kvGetGrants plus watching: the ordered consumers a watch creates, inspects
// and deletes (deleting stops leaked watch consumers, LAYOUT.md), and their flow-control
// replies, scoped to the bucket's stream.
func kvReadGrants(bucket string) []string {
	s := wire.KVStream(bucket)
	return append(kvGetGrants(bucket),
		consumerAPI("CREATE", s, ">"),
		consumerAPI("INFO", s, ">"),
		consumerAPI("DELETE", s, ">"),
		"$JS.FC."+s+".>",
	)
}
