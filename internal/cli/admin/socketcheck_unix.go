//go:build unix

package admin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// checkSocket makes sure the admin socket at path is the one a mesh of this user serves
// before anything, a minted seed least of all, is sent to it: a Unix socket owned by the
// user that only the user may use, in a directory the user owns and nobody else may write,
// so that it cannot be swapped between this check and a later request. A missing socket is
// ErrNoMesh; anything else is ErrUnsafeSocket.
func checkSocket(path string) error {
	me := os.Geteuid()
	dir := filepath.Dir(path)
	dirInfo, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w (%s)", ErrNoMesh, dir)
	}
	if err != nil {
		return fmt.Errorf("admin socket %s: %w", path, err)
	}
	if uid := ownerUID(dirInfo); uid != me {
		return fmt.Errorf("admin socket %s: %w: its directory belongs to uid %d, not to you (uid %d)", path, ErrUnsafeSocket, uid, me)
	}
	if perm := dirInfo.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("admin socket %s: %w: its directory has mode %04o, so others could replace the socket; chmod 700 %s",
			path, ErrUnsafeSocket, perm, dir)
	}
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w (%s)", ErrNoMesh, dir)
	}
	if err != nil {
		return fmt.Errorf("admin socket %s: %w", path, err)
	}
	switch {
	case info.Mode().Type() != fs.ModeSocket:
		return fmt.Errorf("admin socket %s: %w: it is not a socket (%v)", path, ErrUnsafeSocket, info.Mode().Type())
	case ownerUID(info) != me:
		return fmt.Errorf("admin socket %s: %w: it belongs to uid %d, not to you (uid %d)", path, ErrUnsafeSocket, ownerUID(info), me)
	case info.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("admin socket %s: %w: its mode %04o lets others use it, and a mesh makes it 0600",
			path, ErrUnsafeSocket, info.Mode().Perm())
	}
	return nil
}

// ownerUID is the uid owning the file info describes; -1 when the system does not say,
// which matches no user.
func ownerUID(info fs.FileInfo) int {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return -1
	}
	return int(st.Uid)
}
