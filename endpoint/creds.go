package endpoint

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/cotal-go/cotal/wire"
)

// Credential errors. They never carry key material.
var (
	// ErrBadCredential: the .creds content or its user JWT could not be read.
	ErrBadCredential = errors.New("credential is not a valid NATS user .creds")
	// ErrIDMismatch: Options.ID differs from the id bound to the credential (SPEC §2). Connect
	// fails with it before anything is published.
	ErrIDMismatch = errors.New("explicit id does not match the credential's id")
)

// Credential is what a .creds file says about its holder, read without the network (SPEC §2,
// §9). The JWT is decoded, not trusted: the broker verifies it on CONNECT, so these values
// say which identity a connection will be, never that the broker accepts it.
type Credential struct {
	// ID is the JWT subject, the user nkey public key: the instance id (SPEC §2).
	ID string
	// Name is the JWT name.
	Name string
	// Space is the space the grants name (cotal.<space>.…), empty when they name none.
	Space string
	// Profile is the cotal-profile tag: wire.ProfileAgent, wire.ProfileObserver or
	// wire.ProfileAdmin; empty without one.
	Profile string
	// Role is the cotal-role tag, empty without one (SPEC §8).
	Role string
	// ReadACL are the channel patterns the credential may read, from its subscribe grants
	// (SPEC §9 item 2); ">" for the observer's and admin's whole-space grants.
	ReadACL []string
	// Subscribe are the agent's boot channels (--subscribe), in order, from its cotal-subscribe
	// tags; a subset of ReadACL. Empty without such tags, as in credentials minted before the
	// mint wrote them.
	Subscribe []string
	// PublishACL are the channel patterns the credential may send to, from its chat publish
	// grants (SPEC §9: allowPublish); empty for the observer and admin, which have none.
	PublishACL []string
	// Capabilities are the cotal-capability tags: what the holder may ask of the manager
	// control service (wire.CapabilitySpawn).
	Capabilities []string
	// ManagerControl reports whether the credential may send requests to the manager control
	// service (wire.ManagerService): its publish grants hold ctl.manager.<id>. Only agents the
	// supervisor of `cotal up` runs are minted so.
	ManagerControl bool
	// Expires is when the JWT expires; zero when it does not.
	Expires time.Time
}

// ParseCredential reads decorated .creds content (a user JWT block and the user seed block it
// was issued to) and checks that the seed is the JWT subject's, so the id it reports is the id
// the broker will authenticate. Errors wrap ErrBadCredential.
func ParseCredential(contents []byte) (Credential, error) {
	c, err := parseCreds(contents)
	if err != nil {
		return Credential{}, err
	}
	return c.Credential, nil
}

// CredentialSeed returns the user seed of .creds content after ParseCredential's checks, so
// the identity it binds can be minted again (provisioner.MintRequest.Identity). Errors wrap
// ErrBadCredential and never carry key material.
func CredentialSeed(contents []byte) (string, error) {
	c, err := parseCreds(contents)
	if err != nil {
		return "", err
	}
	seed, err := c.kp.Seed()
	if err != nil {
		return "", fmt.Errorf("%w: the user key holds no seed", ErrBadCredential)
	}
	return string(seed), nil
}

// credential is a parsed .creds file with what a connection signs with. The key pair never
// leaves it.
type credential struct {
	Credential
	jwt string
	kp  nkeys.KeyPair
	// subAllow is the subscribe allow-list, the broker-enforced read ACL.
	subAllow []string
	// pubAllow is the publish allow-list; its chat subjects are the send ACL.
	pubAllow []string
}

// parseCreds reads and checks .creds content; see ParseCredential.
func parseCreds(contents []byte) (*credential, error) {
	token, err := jwt.ParseDecoratedJWT(contents)
	if err != nil || strings.Count(token, ".") != 2 {
		return nil, fmt.Errorf("%w: no user JWT block", ErrBadCredential)
	}
	claims, err := jwt.DecodeUserClaims(token)
	if err != nil {
		return nil, fmt.Errorf("%w: the JWT is not a user JWT: %w", ErrBadCredential, err)
	}
	if !nkeys.IsValidPublicUserKey(claims.Subject) {
		return nil, fmt.Errorf("%w: the JWT subject is not a user nkey public key", ErrBadCredential)
	}
	kp, err := jwt.ParseDecoratedUserNKey(contents)
	if err != nil {
		return nil, fmt.Errorf("%w: no user seed block", ErrBadCredential)
	}
	if pub, err := kp.PublicKey(); err != nil || pub != claims.Subject {
		return nil, fmt.Errorf("%w: the seed does not belong to the JWT subject %s", ErrBadCredential, claims.Subject)
	}
	c := &credential{jwt: token, kp: kp, subAllow: claims.Sub.Allow, pubAllow: claims.Pub.Allow}
	c.ID, c.Name = claims.Subject, claims.Name
	c.Space = grantedSpace(claims.Sub.Allow, claims.Pub.Allow)
	if claims.Expires > 0 {
		c.Expires = time.Unix(claims.Expires, 0)
	}
	for _, tag := range claims.Tags {
		if p, ok := strings.CutPrefix(tag, wire.ProfileTagPrefix); ok {
			c.Profile = p
		} else if r, ok := strings.CutPrefix(tag, wire.RoleTagPrefix); ok {
			c.Role = r
		} else if ch, ok := strings.CutPrefix(tag, wire.SubscribeTagPrefix); ok {
			c.Subscribe = append(c.Subscribe, ch)
		} else if cp, ok := strings.CutPrefix(tag, wire.CapabilityTagPrefix); ok {
			c.Capabilities = append(c.Capabilities, cp)
		}
	}
	if c.Space != "" {
		n := wire.NewNames(c.Space)
		c.ReadACL, c.PublishACL = c.readACL(n), c.publishACL(n)
		c.ManagerControl = slices.Contains(c.pubAllow, n.CtlSubject(wire.ManagerService, c.ID))
	}
	return c, nil
}

// grantedSpace is the space the first cotal.<space>.… grant names: every profile is minted
// for one space (SPEC Appendix B).
func grantedSpace(lists ...jwt.StringList) string {
	for _, l := range lists {
		for _, s := range l {
			if toks := strings.SplitN(s, ".", 3); len(toks) == 3 && toks[0] == "cotal" {
				return toks[1]
			}
		}
	}
	return ""
}

// sign answers the server's CONNECT nonce with the credential's key.
func (c *credential) sign(nonce []byte) ([]byte, error) { return c.kp.Sign(nonce) }

// userJWT hands the JWT to the connection.
func (c *credential) userJWT() (string, error) { return c.jwt, nil }

// readACL returns the channel patterns the credential may read in the space n describes,
// taken from its subscribe grants (SPEC §9: allowSubscribe is minted as sub.allow on
// P.chat.*.<channel>; the observer's P.chat.> and the admin's P.> read every channel).
func (c *credential) readACL(n wire.Names) []string {
	acl := []string{}
	chat := n.Prefix() + ".chat.*."
	for _, s := range c.subAllow {
		switch {
		case s == n.Prefix()+".>", s == n.Prefix()+".chat.>":
			acl = append(acl, ">")
		case strings.HasPrefix(s, chat):
			acl = append(acl, strings.TrimPrefix(s, chat))
		}
	}
	return acl
}

// publishACL returns the channel patterns the credential may send to in the space n
// describes, taken from its publish grants (SPEC §9: allowPublish is minted as pub.allow on
// P.chat.<id>.<channel>, the credential's own sender token only).
func (c *credential) publishACL(n wire.Names) []string {
	acl := []string{}
	chat := n.Prefix() + ".chat." + wire.Sanitize(c.ID) + "."
	for _, s := range c.pubAllow {
		if ch, ok := strings.CutPrefix(s, chat); ok {
			acl = append(acl, ch)
		}
	}
	return acl
}
