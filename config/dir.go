package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// ErrNoDataDir means the user's data directory is unknown because the variable it derives
// from is unset; set COTAL_DIR, or dir in the config file, instead.
var ErrNoDataDir = errors.New("cannot determine the user's data directory")

// DefaultDir returns the user's data directory + "/cotal": $XDG_DATA_HOME (when absolute) or
// ~/.local/share on Linux and other Unix systems, ~/Library/Application Support on macOS and
// %LocalAppData% on Windows. It creates nothing.
func DefaultDir() (string, error) {
	return dataDir(runtime.GOOS, os.Getenv)
}

func dataDir(goos string, getenv func(string) string) (string, error) {
	var base string
	switch goos {
	case "windows":
		base = getenv("LocalAppData")
		if base == "" {
			return "", fmt.Errorf("%w: %%LocalAppData%% is not set", ErrNoDataDir)
		}
	case "darwin", "ios":
		home := getenv("HOME")
		if home == "" {
			return "", fmt.Errorf("%w: $HOME is not set", ErrNoDataDir)
		}
		base = filepath.Join(home, "Library", "Application Support")
	default:
		// The XDG base directory spec says a relative XDG_DATA_HOME is invalid and ignored.
		if xdg := getenv("XDG_DATA_HOME"); filepath.IsAbs(xdg) {
			base = xdg
			break
		}
		home := getenv("HOME")
		if home == "" {
			return "", fmt.Errorf("%w: neither $XDG_DATA_HOME nor $HOME is set", ErrNoDataDir)
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "cotal"), nil
}

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
