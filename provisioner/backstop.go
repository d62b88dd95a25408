package provisioner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

// ClusterBackstop holds, per space, the delivery credential a cluster node needs to run that
// space's durable backstop when it holds the space's lease (docs/accounts.md "The backstop
// file"). Unlike ClusterTrust it holds seeds: the file that carries it is as secret as a .creds
// file. Each credential has exactly the delivery profile's grants (wire.DeliveryPermissions),
// never expires and connects in process only, so it serves a cotal node's own connection to its
// embedded server and nothing that dials a listener.
type ClusterBackstop struct {
	// Spaces maps a space name to its delivery credential.
	Spaces map[string]BackstopCredential `json:"spaces"`
}

// BackstopCredential is one space's delivery credential: its user JWT and seed, and the
// delivery control listener's credential, a user of the agent account.
type BackstopCredential struct {
	JWT     string              `json:"jwt"`
	Seed    string              `json:"seed"`
	Control *BackstopCredential `json:"control,omitempty"`
}

// ID is the credential's user public key, from which its inbox prefix derives.
func (c BackstopCredential) ID() (string, error) {
	kp, err := nkeys.FromSeed([]byte(c.Seed))
	if err != nil {
		return "", fmt.Errorf("%w: the backstop credential's seed: %w", ErrInvalidRequest, err)
	}
	defer kp.Wipe()
	return kp.PublicKey()
}

// ClusterBackstop returns the delivery and delivery control credentials of each of spaces
// for the cluster backstop file at path: those the file already holds that the space's
// accounts still accept (so every node keeps one delivery identity, and with it one inbox
// prefix, across restarts of this node), and fresh ones for the rest. It writes the file,
// mode 0600, when it changed anything.
func (s *Store) ClusterBackstop(path string, spaces []string) (ClusterBackstop, error) {
	b, err := ReadClusterBackstop(path)
	if errors.Is(err, ErrNoControlCredential) {
		// Written before the control credential: keep each delivery identity, add the rest.
		err = nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		b = ClusterBackstop{}
	}
	if b.Spaces == nil {
		b.Spaces = map[string]BackstopCredential{}
	}
	changed := false
	for _, space := range spaces {
		acct, err := s.Space(space)
		if err != nil {
			return b, err
		}
		c, ok := b.Spaces[space]
		if !ok || !acceptedBy(c, acct.Storage, acct.StorageJWT) {
			cred, err := s.InfraCredential(space, ProfileDelivery)
			if err != nil {
				return b, err
			}
			c, changed = BackstopCredential{JWT: cred.JWT, Seed: string(cred.Seed)}, true
		}
		if c.Control == nil || !acceptedBy(*c.Control, acct.PublicKey, acct.JWT) {
			cred, err := s.InfraCredential(space, ProfileDeliveryControl)
			if err != nil {
				return b, err
			}
			c.Control, changed = &BackstopCredential{JWT: cred.JWT, Seed: string(cred.Seed)}, true
		}
		b.Spaces[space] = c
	}
	if !changed {
		return b, nil
	}
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return b, err
	}
	if err := WriteSecretFile(path, append(data, '\n')); err != nil {
		return b, fmt.Errorf("write the cluster backstop file: %w", err)
	}
	return b, nil
}

// acceptedBy reports whether c is a user of the account key, whose JWT is token, signed by
// one of its current signing keys.
func acceptedBy(c BackstopCredential, key, token string) bool {
	uc, err := jwt.DecodeUserClaims(c.JWT)
	if err != nil || uc.IssuerAccount != key {
		return false
	}
	ac, err := jwt.DecodeAccountClaims(token)
	if err != nil || !ac.SigningKeys.Contains(uc.Issuer) {
		return false
	}
	id, err := c.ID()
	return err == nil && id == uc.Subject
}

// ErrNoControlCredential is returned by ReadClusterBackstop for a file that carries no
// delivery control credential: one written before the control service listened in the agent
// account.
var ErrNoControlCredential = errors.New("the cluster backstop file carries no delivery control credential")

// ReadClusterBackstop reads a file ClusterBackstop wrote. Its error wraps os.ErrNotExist
// when there is no file.
func ReadClusterBackstop(path string) (ClusterBackstop, error) {
	var b ClusterBackstop
	data, err := os.ReadFile(path)
	if err != nil {
		return b, fmt.Errorf("read the cluster backstop file: %w: copy it from the node that holds the key store", err)
	}
	if err := json.Unmarshal(data, &b); err != nil {
		return b, fmt.Errorf("the cluster backstop file %s is not JSON (%w): copy it again from the node that holds the key store", path, err)
	}
	for space, c := range b.Spaces {
		if c.Control == nil {
			return b, fmt.Errorf("%w: space %s (%s): restart the node that holds the key store on this version, which writes a new one, and copy it here again",
				ErrNoControlCredential, space, path)
		}
		for _, cred := range []BackstopCredential{c, *c.Control} {
			if _, err := jwt.DecodeUserClaims(cred.JWT); err != nil {
				return b, fmt.Errorf("the cluster backstop file's credential of space %s does not decode (%w): copy it again", space, err)
			}
			if _, err := cred.ID(); err != nil {
				return b, fmt.Errorf("space %s: %w", space, err)
			}
		}
	}
	return b, nil
}
