package provisioner

import (
	"fmt"
	"time"

	"github.com/cotal-go/cotal/wire"
	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
	"go.etcd.io/bbolt"
)

// MintRequest describes a credential to mint (SPEC §9). At most one of ExpiresIn, ExpiresAt
// and NoExpiry may be set; with none, the credential lives Options.CredentialTTL.
type MintRequest struct {
	// Space is the space the credential belongs to; it must exist (EnsureSpace).
	Space string
	// Name is the display name, written as the JWT name.
	Name string
	// Profile is ProfileAgent, ProfileObserver, ProfileAdmin or ProfileLeaf.
	Profile Profile
	// Grants are the agent's channel scope and role; they must be empty for other profiles.
	Grants Grants
	// ExpiresIn is the lifetime from the issue time.
	ExpiresIn time.Duration
	// ExpiresAt is an absolute expiry; it must be in the future.
	ExpiresAt time.Time
	// NoExpiry mints a credential that only revocation ends.
	NoExpiry bool
	// InProcessOnly limits the credential to in-process connections (JWT allowed connection
	// type IN_PROCESS): the broker refuses it over TCP, so it is worthless outside the mesh's
	// own process. Package space mints its in-process agents this way.
	InProcessOnly bool
	// Identity keeps an existing user key (re-mint): the credential keeps its instance id,
	// and the previous credential of that id, if still active, is revoked. It must hold the
	// seed. Nil takes a fresh key from the space's key pool (keypool.go).
	Identity nkeys.KeyPair
	// Replace revokes every other active credential that carries Name, in the same step as
	// the mint. Without it, Mint refuses a Name another active credential holds
	// (ErrNameInUse), so a new credential never silently leaves an old one working. In-process
	// credentials neither hold a name nor are refused one.
	Replace bool
	// ForgetOnRevoke lets the registry drop the credential's row as soon as it is revoked,
	// while the revocation itself stays in the account JWT until the JWT expires: for
	// short-lived identities whose record nobody needs once they end, such as those cotal's
	// own commands mint for themselves (Record.ForgetOnRevoke).
	ForgetOnRevoke bool
}

// Credential is a freshly minted user credential. Seed is the user's private key: hand it
// to the instance and nothing else; the store keeps no seed of a minted credential.
type Credential struct {
	// ID is the instance id: the user public key (SPEC §2).
	ID      string
	Name    string
	Profile Profile
	Space   string
	// Grants are the effective grants: AllowSubscribe defaulted to Subscribe.
	Grants    Grants
	IssuedAt  time.Time
	ExpiresAt time.Time // zero: no expiry
	// JWT is the user JWT, signed by the space account's signing key.
	JWT  string
	Seed []byte
	// ACL is the record to write to cotal_acl_<s> under ID (zero for infrastructure
	// credentials, which have none).
	ACL wire.ACLRecord
	// AccountUpdate is the space's new account JWT when minting revoked a previous credential
	// of the same id, else empty. Apply it to the broker before handing the credential out,
	// or the old credential keeps working.
	AccountUpdate string
	// Replaced are the ids of the other credentials of the same name that MintRequest.Replace
	// revoked; write ACLFor of each one's record along with the new credential's.
	Replaced []string
}

// Creds returns the standard NATS .creds file text: the decorated JWT and seed.
func (c *Credential) Creds() ([]byte, error) { return jwt.FormatUserConfig(c.JWT, c.Seed) }

// Mint issues a user credential for req and records it in the registry. The user JWT is
// signed by the space's signing key with IssuerAccount set, carries the Permissions of
// req.Profile and the tags `cotal-profile:<profile>`, with a role `cotal-role:<role>`, and one
// `cotal-subscribe:<channel>` per Subscribe channel in order (case kept; jwt.TagList.Add would
// lowercase them). Re-minting an id whose previous
// credential is still active revokes that credential (SPEC §9 item 6: one current read ACL
// per id), and the new JWT is issued strictly after the revocation time, waiting into the
// next second when needed, so the revocation never covers it. Mint refuses a Name another
// active credential holds (ErrNameInUse, unless req.Replace) and a JWT too long for the
// broker's CONNECT line (ErrCredentialTooLarge); a refused mint records and revokes nothing.
func (s *Store) Mint(req MintRequest) (*Credential, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	if req.Identity != nil {
		if pub, err := req.Identity.PublicKey(); err != nil || !nkeys.IsValidPublicUserKey(pub) {
			return nil, fmt.Errorf("%w: Identity is not a user key", ErrInvalidRequest)
		}
	}
	var c *Credential
	err := s.db.Update(func(tx *bbolt.Tx) error {
		b, err := spaceBucket(tx, req.Space)
		if err != nil {
			return err
		}
		kp := req.Identity
		if kp == nil {
			if kp, err = takePooledKey(b); err != nil {
				return err
			}
			defer kp.Wipe()
		}
		var perms jwt.Permissions
		if c, perms, err = newCredential(req, kp); err != nil {
			return err
		}
		return s.mintTx(tx, req, perms, c)
	})
	if err != nil {
		return nil, fmt.Errorf("mint %s credential %q in space %q: %w", req.Profile, req.Name, req.Space, err)
	}
	return c, nil
}

// newCredential is the unsigned credential req describes for the key kp, and its permissions.
func newCredential(req MintRequest, kp nkeys.KeyPair) (*Credential, jwt.Permissions, error) {
	seed, err := kp.Seed()
	if err != nil {
		return nil, jwt.Permissions{}, fmt.Errorf("%w: Identity holds no seed; pass the instance's full key pair", ErrInvalidRequest)
	}
	pub, _ := kp.PublicKey()
	g := req.Grants
	if req.Profile == ProfileAgent {
		g = g.withDefaults()
	}
	perms, err := Permissions(req.Profile, wire.NewNames(req.Space), pub, g)
	if err != nil {
		return nil, jwt.Permissions{}, err
	}
	c := &Credential{ID: pub, Name: req.Name, Profile: req.Profile, Space: req.Space, Grants: g,
		Seed: append([]byte(nil), seed...)}
	return c, perms, nil
}

// mintTx revokes an active previous credential of c.ID and, with req.Replace, the other
// active holders of the name, signs the new JWT and records it. Any error rolls the whole
// transaction back, so a refused mint registers and revokes nothing.
func (s *Store) mintTx(tx *bbolt.Tx, req MintRequest, perms jwt.Permissions, c *Credential) error {
	b, err := spaceBucket(tx, req.Space)
	if err != nil {
		return err
	}
	reg := b.Bucket(bucketCredentials)
	prev, found, err := getRecord(reg, c.ID)
	if err != nil {
		return err
	}
	acct, err := accountClaims(b)
	if err != nil {
		return err
	}
	var active *Record
	if found && prev.Active(time.Now()) {
		active = &prev
	}
	revoked, err := revokeForMint(b, acct, req, c, active)
	if err != nil {
		return err
	}
	if err := waitPastRevocation(acct, c.ID); err != nil {
		return err
	}
	uc := newUserClaims(acct.Subject, c.ID, c.Name, req.Profile, c.Grants, perms)
	if exp := req.expiry(s.opts.CredentialTTL, time.Now()); !exp.IsZero() {
		uc.Expires = exp.Unix()
	}
	switch {
	case req.InProcessOnly:
		uc.AllowedConnectionTypes.Add(jwt.ConnectionTypeInProcess)
	case req.Profile == ProfileLeaf:
		// A leaf link's grants would serve no client: refuse it anything but a leaf node.
		uc.AllowedConnectionTypes.Add(jwt.ConnectionTypeLeafnode)
	default:
		// A client only: as a leaf node a credential would bring a server of its own into
		// the space, whose connections the mesh neither counts nor caps.
		uc.AllowedConnectionTypes.Add(jwt.ConnectionTypeStandard, jwt.ConnectionTypeWebsocket, jwt.ConnectionTypeInProcess)
	}
	// The mesh's own infrastructure credentials are not bounded: only credentials handed
	// to instances are.
	uc.Limits.Subs, uc.Limits.Payload = s.opts.Limits.Subscriptions, s.opts.Limits.Payload
	if err := signUser(b, agentKeys, acct, uc, c); err != nil {
		return err
	}
	if err := checkConnectLine(c.JWT, c.Grants); err != nil {
		return err
	}
	rec := Record{ID: c.ID, Name: c.Name, Space: c.Space, Profile: c.Profile, Grants: c.Grants,
		IssuedAt: c.IssuedAt, ExpiresAt: c.ExpiresAt, InProcessOnly: req.InProcessOnly,
		ForgetOnRevoke: req.ForgetOnRevoke, Revision: prev.Revision + 1, UpdatedAt: time.Now()}
	c.ACL = ACLFor(rec)
	if err := putRecord(reg, rec); err != nil {
		return err
	}
	// A new id needs its inbox imported before it can watch a bucket; the account is
	// re-signed after the row is written, since its imports are read from the registry.
	if revoked || !importsInbox(acct, c.ID) {
		c.AccountUpdate, err = storeAccount(tx, b, acct)
	}
	return err
}

// revokeForMint adds to acct the revocations a mint implies: active, the id's previous
// credential when it is still active (SPEC §9 item 6: one current read ACL per id), and,
// with req.Replace, every other active holder of the name; without Replace a holder refuses
// the mint. Adding a revocation also prunes the expired ones. It reports whether acct changed.
func revokeForMint(b *bbolt.Bucket, acct *jwt.AccountClaims, req MintRequest, c *Credential, active *Record) (bool, error) {
	now := time.Now()
	var holders []Record
	if !req.InProcessOnly {
		var err error
		if holders, err = holdersOf(b.Bucket(bucketCredentials), req.Name, c.ID, now); err != nil {
			return false, err
		}
	}
	if len(holders) > 0 && !req.Replace {
		return false, nameInUse(req.Name, holders[0])
	}
	if active == nil && len(holders) == 0 {
		return false, nil
	}
	// Pruned before the new revocations are added, so that none of them, nor its row, is
	// dropped in the same step.
	if _, err := pruneRevocations(b, acct, now); err != nil {
		return false, err
	}
	if active != nil {
		// Every earlier JWT of this id was issued at or before the previous one.
		if err := revoke(b, acct, c.ID, active.IssuedAt, active.ExpiresAt); err != nil {
			return false, err
		}
	}
	for i := range holders {
		if err := revokeRecord(b, acct, &holders[i], now); err != nil {
			return false, err
		}
		c.Replaced = append(c.Replaced, holders[i].ID)
	}
	return true, nil
}

// InfraCredential mints a credential for cotal's own provisioner, delivery, delivery control,
// leaf relay or manager control connection in space: a user of the storage account (the last
// three of the agent account), a
// fresh key every call, the narrow permissions of its profile, no expiry (an expiring JWT would disconnect a long-running mesh mid-flight),
// and usable only over an in-process connection (allowed connection type IN_PROCESS), so the
// credential is worthless outside the process that holds it. It is not recorded in the
// registry; a restart mints new ones.
func (s *Store) InfraCredential(space string, p Profile) (*Credential, error) {
	if !p.infra() {
		return nil, fmt.Errorf("%w %q: InfraCredential takes provisioner, delivery, delivery-control, leaf-relay or manager-control", ErrUnknownProfile, p)
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, fmt.Errorf("create user key: %w", err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	perms, err := Permissions(p, wire.NewNames(space), pub, Grants{})
	if err != nil {
		return nil, err
	}
	c := &Credential{ID: pub, Name: "cotal-" + string(p), Profile: p, Space: space, Seed: seed}
	err = s.db.View(func(tx *bbolt.Tx) error {
		b, err := spaceBucket(tx, space)
		if err != nil {
			return err
		}
		keys := storageKeys
		if p.inAgentAccount() {
			keys = agentKeys
		}
		acct, err := claimsOf(b, keys)
		if err != nil {
			return err
		}
		if err := waitPastRevocation(acct, pub); err != nil {
			return err
		}
		uc := newUserClaims(acct.Subject, pub, c.Name, p, Grants{}, perms)
		uc.AllowedConnectionTypes.Add(jwt.ConnectionTypeInProcess)
		return signUser(b, keys, acct, uc, c)
	})
	if err != nil {
		return nil, fmt.Errorf("mint %s credential in space %q: %w", p, space, err)
	}
	return c, nil
}

func newUserClaims(account, id, name string, p Profile, g Grants, perms jwt.Permissions) *jwt.UserClaims {
	uc := jwt.NewUserClaims(id)
	uc.Name = name
	uc.IssuerAccount = account
	uc.Permissions = perms
	// Assigned, not Add()ed: TagList.Add lowercases, the role names svc_<role> exactly and
	// channel names are case-sensitive.
	uc.Tags = jwt.TagList{wire.ProfileTagPrefix + string(p)}
	if g.Role != "" {
		uc.Tags = append(uc.Tags, wire.RoleTagPrefix+g.Role)
	}
	// The JWT's subscribe grants are the read ACL; these name the active read set within it
	// (wire.SubscribeTagPrefix).
	for _, ch := range g.Subscribe {
		uc.Tags = append(uc.Tags, wire.SubscribeTagPrefix+ch)
	}
	for _, c := range g.Capabilities {
		uc.Tags = append(uc.Tags, wire.CapabilityTagPrefix+c)
	}
	return uc
}

// signUser signs uc with the space's signing key and fills c's JWT and times. It refuses a
// JWT the account's revocations already cover.
func signUser(b *bbolt.Bucket, k accountKeys, acct *jwt.AccountClaims, uc *jwt.UserClaims, c *Credential) error {
	signer, err := loadKey(b, k.signing)
	if err != nil {
		return err
	}
	defer signer.Wipe()
	token, err := uc.Encode(signer)
	if err != nil {
		return fmt.Errorf("sign user JWT: %w", err)
	}
	issued, err := jwt.DecodeUserClaims(token)
	if err != nil {
		return fmt.Errorf("decode the JWT just signed: %w", err)
	}
	if acct.IsClaimRevoked(issued) {
		return fmt.Errorf("%w: the new JWT's issue time falls inside its id's revocation", ErrClock)
	}
	c.JWT = token
	c.IssuedAt = time.Unix(issued.IssuedAt, 0)
	if issued.Expires != 0 {
		c.ExpiresAt = time.Unix(issued.Expires, 0)
	}
	return nil
}

// maxRevocationWait bounds how far ahead of the clock a revocation may lie before Mint gives
// up instead of sleeping: only a clock stepped backwards puts it more than a second ahead.
const maxRevocationWait = 2 * time.Second

// waitPastRevocation sleeps until the current second is later than id's revocation time.
// NATS revokes every JWT of a user issued at or before that second, and a JWT's issue time
// has one-second resolution.
func waitPastRevocation(acct *jwt.AccountClaims, id string) error {
	ts := max(acct.Revocations[id], acct.Revocations[jwt.All])
	if ts == 0 {
		return nil
	}
	next := time.Unix(ts+1, 0)
	if time.Until(next) > maxRevocationWait {
		return fmt.Errorf("%w: id %s is revoked until %s, later than now", ErrClock, id, next.UTC().Format(time.RFC3339))
	}
	for time.Now().Before(next) {
		time.Sleep(time.Until(next))
	}
	return nil
}

func (r MintRequest) validate() error {
	if !r.Profile.Valid() || r.Profile.infra() {
		return fmt.Errorf("%w %q: use agent, observer, admin or leaf", ErrUnknownProfile, r.Profile)
	}
	if r.Name == "" {
		return fmt.Errorf("%w: Name is empty; every credential needs a display name", ErrInvalidRequest)
	}
	set := 0
	for _, b := range []bool{r.ExpiresIn != 0, !r.ExpiresAt.IsZero(), r.NoExpiry} {
		if b {
			set++
		}
	}
	switch {
	case set > 1:
		return fmt.Errorf("%w: set at most one of ExpiresIn, ExpiresAt and NoExpiry", ErrInvalidRequest)
	case r.ExpiresIn < 0:
		return fmt.Errorf("%w: ExpiresIn is negative", ErrInvalidRequest)
	case !r.ExpiresAt.IsZero() && !r.ExpiresAt.After(time.Now()):
		return fmt.Errorf("%w: ExpiresAt %s is not in the future", ErrInvalidRequest, r.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return nil
}

// identity returns the requested key, or a fresh user key.
// expiry is the credential's expiry for a JWT issued at issued; zero means none.
func (r MintRequest) expiry(ttl time.Duration, issued time.Time) time.Time {
	switch {
	case r.NoExpiry:
		return time.Time{}
	case !r.ExpiresAt.IsZero():
		return r.ExpiresAt
	case r.ExpiresIn > 0:
		return issued.Add(r.ExpiresIn)
	}
	return issued.Add(ttl)
}
