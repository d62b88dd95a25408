package admin

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"
)

// listenSocket binds the admin socket of dir: the directory is created 0700 when missing, a
// stale socket left by a crashed mesh is replaced, a live one is refused with ErrMeshRunning,
// and the socket is made 0600.
func listenSocket(dir string) (net.Listener, string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", fmt.Errorf("create data directory: %w", err)
	}
	path := filepath.Join(dir, SocketName)
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		_ = c.Close()
		return nil, "", fmt.Errorf("%w: %s is in use by another cotal process; stop it first", ErrMeshRunning, dir)
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return nil, "", fmt.Errorf("remove stale admin socket: %w", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, "", fmt.Errorf("admin socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = ln.Close()
		return nil, "", fmt.Errorf("admin socket: %w", err)
	}
	return ln, path, nil
}
