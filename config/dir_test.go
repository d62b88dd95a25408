package config

import (
	"errors"
	"path/filepath"
	"testing"
)

func TestDataDir(t *testing.T) {
	tests := []struct {
		name string
		goos string
		env  map[string]string
		want string
	}{
		{"linux uses XDG_DATA_HOME when it is absolute", "linux",
			map[string]string{"XDG_DATA_HOME": "/xdg", "HOME": "/home/a"}, filepath.Join("/xdg", "cotal")},
		{"linux ignores a relative XDG_DATA_HOME", "linux",
			map[string]string{"XDG_DATA_HOME": "rel", "HOME": "/home/a"}, filepath.Join("/home/a", ".local", "share", "cotal")},
		{"linux falls back to ~/.local/share", "linux",
			map[string]string{"HOME": "/home/a"}, filepath.Join("/home/a", ".local", "share", "cotal")},
		{"freebsd follows the XDG layout too", "freebsd",
			map[string]string{"HOME": "/home/a"}, filepath.Join("/home/a", ".local", "share", "cotal")},
		{"macOS uses Application Support", "darwin",
			map[string]string{"HOME": "/Users/a", "XDG_DATA_HOME": "/xdg"}, filepath.Join("/Users/a", "Library", "Application Support", "cotal")},
		{"windows uses LocalAppData", "windows",
			map[string]string{"LocalAppData": `C:\Users\a\AppData\Local`}, filepath.Join(`C:\Users\a\AppData\Local`, "cotal")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := dataDir(tt.goos, func(k string) string { return tt.env[k] })
			if err != nil || got != tt.want {
				t.Fatalf("dataDir = %q, %v; want %q, nil", got, err, tt.want)
			}
		})
	}
}

func TestDataDirFailsWithoutHome(t *testing.T) {
	for _, goos := range []string{"linux", "darwin", "windows"} {
		t.Run("on "+goos+" an empty environment is ErrNoDataDir", func(t *testing.T) {
			got, err := dataDir(goos, func(string) string { return "" })
			if !errors.Is(err, ErrNoDataDir) || got != "" {
				t.Fatalf("dataDir = %q, %v; want \"\", ErrNoDataDir", got, err)
			}
		})
	}
}
