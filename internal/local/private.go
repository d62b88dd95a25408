package local

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrUnsafePath means a file or directory cotal would trust could have been written by
// another local user: it is owned by someone else, or group or others may write it. A
// configuration, key store or admin socket planted there would turn on open mode, steal
// minted seeds or impersonate the mesh (SPEC §9 assumes the data directory is the user's).
var ErrUnsafePath = errors.New("could have been written by another user")

// SecureDir makes dir fit to hold the key store, the configuration and the admin socket,
// creating it with mode 0700 when missing. A directory another user owns is refused with
// ErrUnsafePath. One of the user's own that group or others may write is narrowed to 0700
// and its old mode returned in was, for the caller to warn about. Every entry at its top
// level must be the user's too, since a directory that was open may hold planted files:
// SecureDir refuses with ErrUnsafePath naming one that is not. was is 0 when nothing needed
// repair. Where
// ownership is unknown (non-Unix systems, whose permission bits are not the access control)
// it only creates the directory.
func SecureDir(dir string) (was fs.FileMode, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, fmt.Errorf("create data directory %s: %w", dir, err)
	}
	info, err := os.Stat(dir)
	if err != nil {
		return 0, fmt.Errorf("data directory %s: %w", dir, err)
	}
	if !info.IsDir() {
		return 0, fmt.Errorf("data directory %s is not a directory", dir)
	}
	uid, known := owner(info)
	if !known {
		return 0, nil
	}
	if me := os.Geteuid(); uid != me {
		return 0, fmt.Errorf("data directory %s: %w: it belongs to uid %d, not to you (uid %d); use a directory of your own",
			dir, ErrUnsafePath, uid, me)
	}
	if info.Mode().Perm()&0o022 != 0 {
		was = info.Mode().Perm()
		if err := os.Chmod(dir, 0o700); err != nil {
			return 0, fmt.Errorf("narrow data directory %s from mode %04o to 0700: %w", dir, was, err)
		}
	}
	return was, checkEntries(dir)
}

// checkEntries refuses any entry at dir's top level that another user owns: in a directory
// that was writable by others, such a file or link is planted.
func checkEntries(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("data directory %s: %w", dir, err)
	}
	me := os.Geteuid()
	for _, e := range entries {
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("data directory %s: %w", dir, err)
		}
		if uid, known := owner(info); known && uid != me {
			return fmt.Errorf("%s: %w: it belongs to uid %d, not to you (uid %d); remove it if you did not put it there",
				filepath.Join(dir, e.Name()), ErrUnsafePath, uid, me)
		}
	}
	return nil
}

// ReadPrivate reads the file at path only when no other user could have written it: a
// regular file owned by the user or root that only its owner may write, checked on the open
// descriptor so the file checked is the file read even if its name is swapped meanwhile;
// otherwise ErrUnsafePath.
func ReadPrivate(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: it is not a regular file", ErrUnsafePath)
	}
	if err := private(info); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}

// private is nil when info is owned by the user or root and only its owner may write it, and
// where the system does not say who owns it; otherwise ErrUnsafePath saying what to do.
func private(info fs.FileInfo) error {
	uid, known := owner(info)
	if !known {
		return nil
	}
	if me := os.Geteuid(); uid != me && uid != 0 {
		return fmt.Errorf("%w: it belongs to uid %d, not to you (uid %d) or root; remove it if you did not put it there",
			ErrUnsafePath, uid, me)
	}
	if perm := info.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("%w: its mode %04o lets others write it; check its content, then chmod go-w it",
			ErrUnsafePath, perm)
	}
	return nil
}

// CheckPrivateDir applies ReadPrivate's rule to the directory at path: one another user owns
// or may write could have its files swapped for planted ones, so it is ErrUnsafePath.
func CheckPrivateDir(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return fmt.Errorf("%w: it is not a directory", ErrUnsafePath)
	}
	return private(info)
}
