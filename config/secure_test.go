//go:build unix

package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// nobody is the uid the tests give "another local user's" files; chown needs root.
const nobody = 65534

func chown(t *testing.T, path string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("chown to another user needs root")
	}
	if err := os.Lchown(path, nobody, nobody); err != nil {
		t.Fatal(err)
	}
}

// TestLoadRefusesAConfigFileOthersCouldWrite checks that a cotal.yaml another user could have
// written is refused rather than repaired: it may already hold open: true.
func TestLoadRefusesAConfigFileOthersCouldWrite(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, path string)
		refused string // "" means Load reads it
	}{
		{"a 0600 file of the user's is read", func(t *testing.T, path string) {}, ""},
		{"a 0644 file of the user's is read", func(t *testing.T, path string) { chmod(t, path, 0o644) }, ""},
		{"a world-writable file is refused", func(t *testing.T, path string) { chmod(t, path, 0o666) },
			"mode 0666 lets others write it"},
		{"a group-writable file is refused", func(t *testing.T, path string) { chmod(t, path, 0o620) },
			"mode 0620 lets others write it"},
		{"a file another user owns is refused", func(t *testing.T, path string) { chown(t, path) },
			"belongs to uid 65534"},
	}
	for _, tt := range tests {
		for _, explicit := range []bool{false, true} {
			name := tt.name + " in the data directory"
			if explicit {
				name = tt.name + " named with --config"
			}
			t.Run(name, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, FileName)
				write(t, path, "open: true\n", 0o600)
				tt.prepare(t, path)
				opts := LoadOptions{Dir: dir, Env: []string{"HOME=" + dir}}
				if explicit {
					opts = LoadOptions{File: path, Env: []string{"HOME=" + dir}}
				}
				c, err := Load(opts)
				if tt.refused == "" {
					if err != nil || !c.Open {
						t.Fatalf("Load = %+v, %v; want the file's open: true", c, err)
					}
					return
				}
				if !errors.Is(err, ErrUnsafePath) || !strings.Contains(err.Error(), tt.refused) || !strings.Contains(err.Error(), path) {
					t.Fatalf("Load = %+v, %v; want ErrUnsafePath naming %s and %q", c, err, path, tt.refused)
				}
			})
		}
	}
}

func write(t *testing.T, path, content string, perm fs.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
	chmod(t, path, perm)
}

func chmod(t *testing.T, path string, perm fs.FileMode) {
	t.Helper()
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
}
