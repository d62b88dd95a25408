package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
)

// MintSpec is a credential request in a form that travels as JSON.
type MintSpec struct {
	Space          string        `json:"space"`
	Name           string        `json:"name"`
	Profile        string        `json:"profile"`
	Role           string        `json:"role,omitempty"`
	Subscribe      []string      `json:"subscribe,omitempty"`
	AllowSubscribe []string      `json:"allowSubscribe,omitempty"`
	AllowPublish   []string      `json:"allowPublish,omitempty"`
	ExpiresIn      time.Duration `json:"expiresIn,omitempty"`
	ExpiresAt      time.Time     `json:"expiresAt,omitzero"`
	NoExpiry       bool          `json:"noExpiry,omitempty"`
	// IdentitySeed keeps an existing nkey (re-mint). It is a secret: send it only over a
	// channel as private as the key store itself.
	IdentitySeed string `json:"identitySeed,omitempty"`
	// Replace revokes the other active credentials of Name (provisioner.MintRequest.Replace).
	Replace bool `json:"replace,omitempty"`
	// ForgetOnRevoke drops the registry row once the credential is revoked
	// (provisioner.MintRequest.ForgetOnRevoke).
	ForgetOnRevoke bool `json:"forgetOnRevoke,omitempty"`
	// ManagerControl and Capabilities are provisioner.Grants' own: the reach of the manager
	// control service and what the agent may ask of it. Only the supervisor of the process
	// that runs the mesh sets them; they never travel over the socket, so a credential minted
	// any other way cannot reach the manager service.
	ManagerControl bool     `json:"-"`
	Capabilities   []string `json:"-"`
}

// MintedCredential is a minted credential: its id and the .creds file text.
type MintedCredential struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Space     string    `json:"space"`
	Profile   string    `json:"profile"`
	Role      string    `json:"role,omitempty"`
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	Creds     []byte    `json:"creds"`
	// Provisioned is true when the mesh created the agent's bind-only consumers; false when a
	// running mesh still has to (MintInStore), or for a profile that has none.
	Provisioned bool `json:"provisioned"`
}

// request turns a MintSpec into the provisioner's request.
func (s MintSpec) request() (provisioner.MintRequest, error) {
	req := provisioner.MintRequest{
		Space: s.Space, Name: s.Name, Profile: provisioner.Profile(s.Profile),
		Grants: provisioner.Grants{Subscribe: s.Subscribe, AllowSubscribe: s.AllowSubscribe,
			AllowPublish: s.AllowPublish, Role: s.Role, ManagerControl: s.ManagerControl,
			Capabilities: s.Capabilities},
		ExpiresIn: s.ExpiresIn, ExpiresAt: s.ExpiresAt, NoExpiry: s.NoExpiry, Replace: s.Replace,
		ForgetOnRevoke: s.ForgetOnRevoke,
	}
	if s.IdentitySeed != "" {
		kp, err := nkeys.FromSeed([]byte(s.IdentitySeed))
		if err != nil {
			return req, fmt.Errorf("%w: IdentitySeed is not a user seed: %w", provisioner.ErrInvalidRequest, err)
		}
		req.Identity = kp
	}
	return req, nil
}

// Mint mints spec through the running mesh m (space.Mesh.Mint): the credential, its ACL
// record, the broker's view of revocations, and an agent's bind-only consumers.
func Mint(ctx context.Context, m *space.Mesh, spec MintSpec) (*MintedCredential, error) {
	req, err := spec.request()
	if err != nil {
		return nil, err
	}
	cred, err := m.Mint(ctx, req)
	if err != nil {
		return nil, err
	}
	return minted(cred, cred.Profile == provisioner.ProfileAgent)
}

// MintInStore mints spec straight in a key store on which no mesh runs. The ACL record and
// the instance's consumers are written by the mesh when it next starts (Start reconciles both
// from the registry), so the result is never Provisioned.
func MintInStore(store *provisioner.Store, spec MintSpec) (*MintedCredential, error) {
	req, err := spec.request()
	if err != nil {
		return nil, err
	}
	if _, err := store.EnsureSpace(spec.Space); err != nil {
		return nil, err
	}
	cred, err := store.Mint(req)
	if err != nil {
		return nil, err
	}
	return minted(cred, false)
}

func minted(cred *provisioner.Credential, provisioned bool) (*MintedCredential, error) {
	creds, err := cred.Creds()
	if err != nil {
		return nil, err
	}
	return &MintedCredential{ID: cred.ID, Name: cred.Name, Space: cred.Space,
		Profile: string(cred.Profile), Role: cred.Grants.Role, ExpiresAt: cred.ExpiresAt,
		Creds: creds, Provisioned: provisioned}, nil
}
