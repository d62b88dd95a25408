package provisioner

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
	"go.etcd.io/bbolt"
)

// ClusterTrust is what a cluster node without the key store needs to join the cluster: the
// operator JWT and the system account's JWT, both public, and the route secret and route
// certificate every node shares. Routes on loopback run TLS with that certificate, so a
// process that takes a stopped node's route port is refused before it learns the secret.
// The secret and the certificate's key make the file as secret as a .creds file: it is
// written 0600 and copied to the other nodes only. Every other account reaches such a node
// through the cluster's account resolver.
type ClusterTrust struct {
	OperatorJWT      string `json:"operatorJwt"`
	SystemAccountJWT string `json:"systemAccountJwt"`
	// RouteSecret is the password of the cluster's routes (broker.Cluster.Secret).
	RouteSecret string `json:"routeSecret"`
	// RouteCert and RouteKey are the shared route certificate, for loopback addresses, and its
	// private key, PEM; the certificate is its own CA.
	RouteCert string `json:"routeCert"`
	RouteKey  string `json:"routeKey"`
	// KeyStoreNode is the server name of the node that holds the key store and wrote the
	// file, so that a node without it can say where to mint; empty in a file written before
	// it was recorded.
	KeyStoreNode string `json:"keyStoreNode,omitempty"`
}

// The route secret, certificate and key live in the system bucket, made at the first
// ClusterTrust: a key store that never ran a cluster node has none.
var (
	keyRouteSecret = []byte("route_secret")
	keyRouteCert   = []byte("route_cert")
	keyRouteKey    = []byte("route_key")
)

// ErrNoRouteSecret is returned by ReadClusterTrust for a trust file that carries no route
// secret or certificate: one written before routes were authenticated.
var ErrNoRouteSecret = errors.New("the cluster trust file carries no route secret")

// ClusterTrust returns the store's operator and system account JWTs and the route secret and
// certificate, making them on first use.
func (s *Store) ClusterTrust() (ClusterTrust, error) {
	var t ClusterTrust
	err := s.db.Update(func(tx *bbolt.Tx) error {
		sys := tx.Bucket(bucketSystem)
		t.OperatorJWT = string(tx.Bucket(bucketOperator).Get(keyJWT))
		t.SystemAccountJWT = string(sys.Get(keyJWT))
		if sys.Get(keyRouteSecret) == nil {
			cert, key, err := newRouteCert()
			if err != nil {
				return err
			}
			if err := errors.Join(sys.Put(keyRouteSecret, []byte(rand.Text())), sys.Put(keyRouteCert, cert), sys.Put(keyRouteKey, key)); err != nil {
				return err
			}
		}
		t.RouteSecret, t.RouteCert, t.RouteKey = string(sys.Get(keyRouteSecret)), string(sys.Get(keyRouteCert)), string(sys.Get(keyRouteKey))
		return nil
	})
	return t, err
}

// routeCertLife is how long the shared route certificate is valid: it is made once per key
// store and never rotated, so for the store's lifetime.
const routeCertLife = 100 * 365 * 24 * time.Hour

// newRouteCert makes a self-signed certificate for the loopback addresses, valid as server
// and as client, and its key, both PEM.
func newRouteCert() (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("create the route key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, fmt.Errorf("create the route certificate's serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "cotal cluster route"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(routeCertLife),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, DNSNames: []string{"localhost"},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IsCA:        true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("sign the route certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode the route key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
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
	if err := WriteSecretFile(path, append(data, '\n')); err != nil {
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
	if t.RouteSecret == "" || t.RouteCert == "" || t.RouteKey == "" {
		return t, fmt.Errorf("%w (%s): restart the node that holds the key store on this version, which writes a new one, and copy it here again", ErrNoRouteSecret, path)
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
