package provisioner

import (
	"fmt"

	"github.com/cotal-go/cotal/wire"
	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

// Profile names a permission shape (SPEC §9, Appendix B).
type Profile string

// The user-facing profiles of SPEC Appendix B, named in package wire (wire.ProfileAgent, ...).
// Appendix B's allow-all manager profile is not offered: its duties are split between the two
// narrow infrastructure profiles below.
const (
	// ProfileAgent posts to its allowPublish channels and reads within allowSubscribe.
	ProfileAgent Profile = wire.ProfileAgent
	// ProfileObserver reads all chat, CHAT history, presence and the channel registry.
	ProfileObserver Profile = wire.ProfileObserver
	// ProfileAdmin is observer plus the whole space's live view (Endpoint.Follow) and DM history.
	ProfileAdmin Profile = wire.ProfileAdmin
	// ProfileLeaf links a leaf mesh to this one, its hub (docs/accounts.md "Leaf links"): chat,
	// DMs and presence cross the link (wire.LeafPermissions), and the credential connects only
	// as a leaf node.
	ProfileLeaf Profile = wire.ProfileLeaf
)

// The infrastructure profiles, minted only by InfraCredential for cotal's own in-process
// connections.
const (
	// ProfileProvisioner creates the space's streams, buckets and bind-only durables and
	// writes the channel registry and ACL records.
	ProfileProvisioner Profile = "provisioner"
	// ProfileDelivery runs the durable backstop (docs/durable.md): fan-out, trusted reader and
	// the work of the `delivery` control service.
	ProfileDelivery Profile = "delivery"
	// ProfileDeliveryControl takes the `delivery` control service's requests and sends its
	// answers (wire.DeliveryControlPermissions); a user of the agent account, where it sees
	// each request's own reply subject.
	ProfileDeliveryControl Profile = "delivery-control"
	// ProfileLeafRelay relays presence records across a leaf link (wire.LeafRelayPermissions);
	// a user of the agent account, where agents write presence.
	ProfileLeafRelay Profile = "leaf-relay"
	// ProfileManagerControl takes the `manager` control service's requests and sends its
	// answers (wire.ManagerControlPermissions); a user of the agent account, opened by the
	// process that supervises agents (`cotal up`).
	ProfileManagerControl Profile = "manager-control"
)

// Valid reports whether p is one of the Profile constants.
func (p Profile) Valid() bool {
	switch p {
	case ProfileAgent, ProfileObserver, ProfileAdmin, ProfileLeaf, ProfileProvisioner, ProfileDelivery, ProfileDeliveryControl,
		ProfileLeafRelay, ProfileManagerControl:
		return true
	}
	return false
}

// infra reports whether p is an infrastructure profile.
func (p Profile) infra() bool {
	return p == ProfileProvisioner || p == ProfileDelivery || p == ProfileDeliveryControl || p == ProfileLeafRelay ||
		p == ProfileManagerControl
}

// inAgentAccount reports whether the infrastructure profile p is a user of the agent account
// rather than of storage.
func (p Profile) inAgentAccount() bool {
	return p == ProfileDeliveryControl || p == ProfileLeafRelay || p == ProfileManagerControl
}

// Permissions returns the exact NATS permissions of profile for the instance id (a user public
// key) in the space names describes: SPEC Appendix B plus cotal's additions (docs/accounts.md
// "Profiles and grants"). Grants apply to ProfileAgent only; any grant or role given to another
// profile fails with ErrGrantsNotAllowed. It is a pure function of its arguments.
func Permissions(profile Profile, names wire.Names, id string, g Grants) (jwt.Permissions, error) {
	if names.Space() == "" {
		return jwt.Permissions{}, fmt.Errorf("%w: the space name is empty", ErrInvalidRequest)
	}
	if !nkeys.IsValidPublicUserKey(id) {
		return jwt.Permissions{}, fmt.Errorf("%w: id %q is not a user public key", ErrInvalidGrant, id)
	}
	if profile != ProfileAgent && !g.IsZero() {
		return jwt.Permissions{}, fmt.Errorf("%w: the %s profile takes no subscribe, allowSubscribe, allowPublish or role", ErrGrantsNotAllowed, profile)
	}
	var w wire.Permissions
	switch profile {
	case ProfileAgent:
		g = g.withDefaults()
		if err := g.validate(); err != nil {
			return jwt.Permissions{}, err
		}
		w = wire.AgentPermissions(names, id, wire.AgentScope{AllowSubscribe: g.AllowSubscribe, AllowPublish: g.AllowPublish,
			Role: g.Role, ManagerControl: g.ManagerControl})
	case ProfileObserver:
		w = wire.ObserverPermissions(names, id)
	case ProfileAdmin:
		w = wire.AdminPermissions(names, id)
	case ProfileLeaf:
		w = wire.LeafPermissions(names, id)
	case ProfileProvisioner:
		w = wire.ProvisionerPermissions(names, id)
	case ProfileDelivery:
		w = wire.DeliveryPermissions(names, wire.InboxPrefix(id))
	case ProfileDeliveryControl:
		w = wire.DeliveryControlPermissions(names)
	case ProfileLeafRelay:
		w = wire.LeafRelayPermissions(names)
	case ProfileManagerControl:
		w = wire.ManagerControlPermissions(names)
	default:
		return jwt.Permissions{}, fmt.Errorf("%w %q: use agent, observer, admin or leaf", ErrUnknownProfile, profile)
	}
	return jwtPermissions(w), nil
}

// jwtPermissions carries wire's permissions into a JWT, in the same order.
func jwtPermissions(w wire.Permissions) jwt.Permissions {
	var p jwt.Permissions
	p.Pub.Allow.Add(w.Pub.Allow...)
	p.Pub.Deny.Add(w.Pub.Deny...)
	p.Sub.Allow.Add(w.Sub.Allow...)
	p.Sub.Deny.Add(w.Sub.Deny...)
	return p
}
