package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/cotal-go/cotal/internal/local"
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
// another local user; Load refuses such a configuration file with it. It is
// space.ErrUnsafePath, which space.Start returns for such a data directory.
var ErrUnsafePath = local.ErrUnsafePath
