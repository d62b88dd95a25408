package space

import (
	"errors"

	"github.com/cotal-go/cotal/provisioner"
)

// MintOffline mints with no mesh running, straight in dir's key store. The ACL record and
// the instance's consumers are written by the mesh when it next starts (Start reconciles
// both from the registry).
func MintOffline(dir string, spec MintSpec) (*MintedCredential, error) {
	req, err := spec.request()
	if err != nil {
		return nil, err
	}
	var cred *provisioner.Credential
	err = withStore(dir, func(s *provisioner.Store) error {
		if _, err := s.EnsureSpace(spec.Space); err != nil {
			return err
		}
		cred, err = s.Mint(req)
		return err
	})
	if err != nil {
		return nil, err
	}
	return minted(cred, false)
}

// ListOffline lists the credentials of space in dir's key store with no mesh running.
func ListOffline(dir, space string) ([]CredentialInfo, error) {
	var recs []CredentialInfo
	err := withStore(dir, func(s *provisioner.Store) error {
		var err error
		recs, err = s.List(space)
		return err
	})
	return recs, err
}

// RevokeOffline revokes a credential with no mesh running; the account JWT with the new
// revocation is what the broker loads at the next start.
func RevokeOffline(dir, space, id string) error {
	return withStore(dir, func(s *provisioner.Store) error {
		_, err := s.Revoke(space, id)
		return err
	})
}

func withStore(dir string, fn func(*provisioner.Store) error) error {
	s, err := provisioner.Open(dir, provisioner.DefaultOptions())
	if err != nil {
		return err
	}
	return errors.Join(fn(s), s.Close())
}
