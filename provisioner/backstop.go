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
// space's durable backstop when it holds the space's lease (issue 14 item 3). Unlike
// ClusterTrust it holds seeds: the file that carries it is as secret as a .creds file. Each
// credential has exactly the delivery profile's grants (wire.DeliveryPermissions), never
// expires and connects in process only, so it serves a cotal node's own connection to its
// embedded server and nothing that dials a listener.
type ClusterBackstop struct {
	// Spaces maps a space name to its delivery credential.
	Spaces map[string]BackstopCredential `json:"spaces"`
}

// BackstopCredential is one space's delivery credential: its user JWT and seed.
type BackstopCredential struct {
	JWT  string `json:"jwt"`
	Seed string `json:"seed"`
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

// ClusterBackstop returns the delivery credential of each of spaces for the cluster backstop
// file at path: those the file already holds that the space's storage account still accepts
// (so every node keeps one delivery identity, and with it one inbox prefix, across restarts of
// this node), and a fresh one for each other space. It writes the file, mode 0600, when it
// changed anything.
func (s *Store) ClusterBackstop(path string, spaces []string) (ClusterBackstop, error) {
	b, err := ReadClusterBackstop(path)
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
		if c, ok := b.Spaces[space]; ok && acceptedBy(c, acct) {
			continue
		}
		cred, err := s.InfraCredential(space, ProfileDelivery)
		if err != nil {
			return b, err
		}
		b.Spaces[space] = BackstopCredential{JWT: cred.JWT, Seed: string(cred.Seed)}
		changed = true
	}
	if !changed {
		return b, nil
	}
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return b, err
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o600); err != nil {
		return b, fmt.Errorf("write the cluster backstop file: %w", err)
	}
	return b, nil
}

// acceptedBy reports whether c is a delivery user of acct's storage account signed by one of
// its current signing keys.
func acceptedBy(c BackstopCredential, acct Account) bool {
	uc, err := jwt.DecodeUserClaims(c.JWT)
	if err != nil || uc.IssuerAccount != acct.Storage {
		return false
	}
	ac, err := jwt.DecodeAccountClaims(acct.StorageJWT)
	if err != nil || !ac.SigningKeys.Contains(uc.Issuer) {
		return false
	}
	id, err := c.ID()
	return err == nil && id == uc.Subject
}

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
		if _, err := jwt.DecodeUserClaims(c.JWT); err != nil {
			return b, fmt.Errorf("the cluster backstop file's credential of space %s does not decode (%w): copy it again", space, err)
		}
		if _, err := c.ID(); err != nil {
			return b, fmt.Errorf("space %s: %w", space, err)
		}
	}
	return b, nil
}
