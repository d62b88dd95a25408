package provisioner

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
	"go.etcd.io/bbolt"
)

// ClusterTrust is what a cluster node without the key store needs to trust the mesh's
// operator (issue 14): the operator JWT and the system account's JWT. Both are public; it
// holds no seed, so the file that carries it can be copied to the other nodes freely. Every
// other account reaches such a node through the cluster's account resolver.
type ClusterTrust struct {
	OperatorJWT      string `json:"operatorJwt"`
	SystemAccountJWT string `json:"systemAccountJwt"`
	// KeyStoreNode is the server name of the node that holds the key store and wrote the
	// file, so that a node without it can say where to mint; empty in a file written before
	// it was recorded.
	KeyStoreNode string `json:"keyStoreNode,omitempty"`
}

// ClusterTrust returns the store's operator and system account JWTs.
func (s *Store) ClusterTrust() (ClusterTrust, error) {
	var t ClusterTrust
	err := s.db.View(func(tx *bbolt.Tx) error {
		t.OperatorJWT = string(tx.Bucket(bucketOperator).Get(keyJWT))
		t.SystemAccountJWT = string(tx.Bucket(bucketSystem).Get(keyJWT))
		return nil
	})
	return t, err
}

// Trust is the trust chain of a node holding t: the operator, the system account and its
// JWT, the only account such a node knows before the cluster's resolver tells it the others.
func (t ClusterTrust) Trust() (Trust, error) {
	sys, err := jwt.DecodeAccountClaims(t.SystemAccountJWT)
	if err != nil {
		return Trust{}, fmt.Errorf("%w: the system account JWT does not decode: %w", ErrInvalidRequest, err)
	}
	if _, err := jwt.DecodeOperatorClaims(t.OperatorJWT); err != nil {
		return Trust{}, fmt.Errorf("%w: the operator JWT does not decode: %w", ErrInvalidRequest, err)
	}
	return Trust{OperatorJWT: t.OperatorJWT, SystemAccount: sys.Subject, Accounts: map[string]string{sys.Subject: t.SystemAccountJWT}}, nil
}

// WriteClusterTrust writes t to path as JSON, mode 0600 like every file cotal writes.
func WriteClusterTrust(path string, t ClusterTrust) error {
	data, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write the cluster trust file: %w", err)
	}
	return nil
}

// ReadClusterTrust reads a file WriteClusterTrust wrote.
func ReadClusterTrust(path string) (ClusterTrust, error) {
	var t ClusterTrust
	data, err := os.ReadFile(path)
	if err != nil {
		return t, fmt.Errorf("read the cluster trust file: %w: copy it from the node that holds the key store", err)
	}
	if err := json.Unmarshal(data, &t); err != nil {
		return t, fmt.Errorf("the cluster trust file %s is not JSON (%w): copy it again from the node that holds the key store", path, err)
	}
	_, err = t.Trust()
	return t, err
}

// SystemCredential mints a user of the system account for the broker's own in-process use:
// it sends account updates to the other nodes of a cluster. A fresh key every call, no
// expiry, in-process connections only; it is not recorded.
func (s *Store) SystemCredential() (*Credential, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, fmt.Errorf("create user key: %w", err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	c := &Credential{ID: pub, Name: "cotal-system", Seed: seed}
	err = s.db.View(func(tx *bbolt.Tx) error {
		sys, err := loadKey(tx.Bucket(bucketSystem), keySeed)
		if err != nil {
			return err
		}
		defer sys.Wipe()
		uc := jwt.NewUserClaims(pub)
		uc.Name = c.Name
		uc.AllowedConnectionTypes.Add(jwt.ConnectionTypeInProcess)
		c.JWT, err = uc.Encode(sys)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("mint the system credential: %w", err)
	}
	return c, nil
}
