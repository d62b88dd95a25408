package broker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// lockFileName sits beside nats-server's "jetstream" directory inside StoreDir.
const lockFileName = "broker.lock"

// store is the JetStream store directory a broker owns while it runs.
type store struct {
	dir  string
	temp bool     // a private directory for a Memory mesh, removed at release
	lock *os.File // holds the store lock; nil for a temporary directory
}

// openStore prepares the store directory. nats-server takes no lock on its store, and two
// servers recovering and writing one store corrupt it, so a persistent store is locked here
// first; a second broker on the same directory fails with ErrStoreLocked before nats-server
// reads a byte of it.
func openStore(cfg Config) (*store, error) {
	if cfg.StoreDir == "" {
		dir, err := os.MkdirTemp("", "cotal-broker-")
		if err != nil {
			return nil, fmt.Errorf("create a temporary store directory for the memory mesh: %w", err)
		}
		return &store{dir: dir, temp: true}, nil
	}
	if err := os.MkdirAll(cfg.StoreDir, 0o700); err != nil {
		return nil, fmt.Errorf("create StoreDir %s: %w", cfg.StoreDir, err)
	}
	f, err := os.OpenFile(filepath.Join(cfg.StoreDir, lockFileName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the store lock in %s: %w", cfg.StoreDir, err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		if errors.Is(err, ErrStoreLocked) {
			return nil, fmt.Errorf("%w: %s: stop the other broker or choose another StoreDir", ErrStoreLocked, cfg.StoreDir)
		}
		return nil, fmt.Errorf("lock StoreDir %s: %w", cfg.StoreDir, err)
	}
	return &store{dir: cfg.StoreDir, lock: f}, nil
}

// release gives the store up; call it only once nats-server has stopped writing.
func (s *store) release() error {
	if s.temp {
		if err := os.RemoveAll(s.dir); err != nil {
			return fmt.Errorf("remove the memory mesh's temporary store %s: %w", s.dir, err)
		}
		return nil
	}
	// Closing the file drops the lock.
	if err := s.lock.Close(); err != nil {
		return fmt.Errorf("release the lock on StoreDir %s: %w", s.dir, err)
	}
	return nil
}
