package endpoint

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/cotal-go/cotal/wire"
	"strings"

	"github.com/nats-io/nkeys"
)

// Credential errors. They never carry key material.
var (
	// ErrBadCredential: the .creds content or its user JWT could not be read.
	ErrBadCredential = errors.New("credential is not a valid NATS user .creds")
	// ErrIDMismatch: Options.ID differs from the id bound to the credential (SPEC §2). Connect
	// fails with it before anything is published.
	ErrIDMismatch = errors.New("explicit id does not match the credential's id")
)

// Tag prefixes a minted user JWT carries in nats.tags. The JWT library lowercases tags, so the
// values read back are lowercase.
const (
	roleTagPrefix    = "cotal-role:"
	profileTagPrefix = "cotal-profile:"
)

// credential is what an Endpoint takes from a .creds file: the user JWT and its signing key for
// the connection, and the identity the JWT binds (SPEC §2). The key pair never leaves it.
type credential struct {
	jwt     string
	kp      nkeys.KeyPair
	id      string // the JWT sub: the user nkey public key, the instance id
	name    string // the JWT name
	role    string // from the cotal-role:<role> tag, empty without one
	profile string // from the cotal-profile:<p> tag, empty without one
	// subAllow is the credential's subscribe allow-list, the broker-enforced read ACL.
	subAllow []string
}

// userClaims is the part of a NATS user JWT payload an Endpoint reads. The JWT is decoded, not
// verified: the broker verifies it on CONNECT, and the client only needs to know which identity
// it will be (SPEC §2).
type userClaims struct {
	Subject string `json:"sub"`
	Name    string `json:"name"`
	Nats    struct {
		Type string   `json:"type"`
		Tags []string `json:"tags"`
		Sub  struct {
			Allow []string `json:"allow"`
		} `json:"sub"`
	} `json:"nats"`
}

// parseCreds reads decorated .creds content (a user JWT block and a user seed block) and checks
// that the seed is the key the JWT was issued to, so the id adopted is the id the broker will
// authenticate.
func parseCreds(contents []byte) (*credential, error) {
	token, err := nkeys.ParseDecoratedJWT(contents)
	if err != nil || strings.Count(token, ".") != 2 {
		return nil, fmt.Errorf("%w: no user JWT block", ErrBadCredential)
	}
	kp, err := nkeys.ParseDecoratedUserNKey(contents)
	if err != nil {
		return nil, fmt.Errorf("%w: no user seed block", ErrBadCredential)
	}
	claims, err := decodeUserClaims(token)
	if err != nil {
		return nil, err
	}
	pub, err := kp.PublicKey()
	if err != nil || pub != claims.Subject {
		return nil, fmt.Errorf("%w: the seed does not belong to the JWT subject %s", ErrBadCredential, claims.Subject)
	}
	c := &credential{jwt: token, kp: kp, id: claims.Subject, name: claims.Name, subAllow: claims.Nats.Sub.Allow}
	for _, tag := range claims.Nats.Tags {
		switch {
		case strings.HasPrefix(tag, roleTagPrefix):
			c.role = strings.TrimPrefix(tag, roleTagPrefix)
		case strings.HasPrefix(tag, profileTagPrefix):
			c.profile = strings.TrimPrefix(tag, profileTagPrefix)
		}
	}
	return c, nil
}

// decodeUserClaims decodes the payload (the base64url middle segment) of a user JWT and checks
// that it names a user nkey as subject (SPEC §2: the id is a U-prefixed nkey public key).
func decodeUserClaims(token string) (userClaims, error) {
	var claims userClaims
	segs := strings.Split(token, ".")
	if len(segs) != 3 {
		return claims, fmt.Errorf("%w: a JWT has three dot-separated segments", ErrBadCredential)
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(segs[1], "="))
	if err != nil {
		return claims, fmt.Errorf("%w: JWT payload is not base64url", ErrBadCredential)
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return claims, fmt.Errorf("%w: JWT payload is not JSON", ErrBadCredential)
	}
	if claims.Nats.Type != "" && claims.Nats.Type != "user" {
		return claims, fmt.Errorf("%w: JWT type is %q, want user", ErrBadCredential, claims.Nats.Type)
	}
	if !nkeys.IsValidPublicUserKey(claims.Subject) {
		return claims, fmt.Errorf("%w: JWT subject is not a user nkey public key", ErrBadCredential)
	}
	return claims, nil
}

// sign answers the server's CONNECT nonce with the credential's key.
func (c *credential) sign(nonce []byte) ([]byte, error) { return c.kp.Sign(nonce) }

// userJWT hands the JWT to the connection.
func (c *credential) userJWT() (string, error) { return c.jwt, nil }

// Profiles read from the cotal-profile tag that make an Endpoint passive.
const (
	profileObserver = "observer"
	profileAdmin    = "admin"
)

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
