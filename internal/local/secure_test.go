//go:build unix

package local

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

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Mode().Perm()
}

// TestSecureDir covers docs/hostile-agents.md "A local user": a data directory is the user's
// alone before the mesh trusts what is in it.
func TestSecureDir(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, dir string)
		was     fs.FileMode
		refused string // "" means SecureDir succeeds and leaves dir 0700
	}{
		{"a missing directory is created with mode 0700",
			func(t *testing.T, dir string) {}, 0, ""},
		{"a private directory is left alone",
			func(t *testing.T, dir string) { mkdir(t, dir, 0o700) }, 0, ""},
		{"a world-writable directory of the user's is narrowed to 0700",
			func(t *testing.T, dir string) { mkdir(t, dir, 0o777) }, 0o777, ""},
		{"a group-writable directory of the user's is narrowed to 0700",
			func(t *testing.T, dir string) { mkdir(t, dir, 0o770) }, 0o770, ""},
		{"a directory another user owns is refused",
			func(t *testing.T, dir string) { mkdir(t, dir, 0o700); chown(t, dir) }, 0, "belongs to uid 65534"},
		{"a file another user planted in an open directory is refused",
			func(t *testing.T, dir string) {
				mkdir(t, dir, 0o777)
				write(t, filepath.Join(dir, "cotal.yaml"), "open: true\n", 0o600)
				chown(t, filepath.Join(dir, "cotal.yaml"))
			}, 0, "cotal.yaml: could have been written by another user"},
		{"a symlink another user planted is refused",
			func(t *testing.T, dir string) {
				mkdir(t, dir, 0o700)
				link := filepath.Join(dir, "keys.db")
				if err := os.Symlink("/etc/passwd", link); err != nil {
					t.Fatal(err)
				}
				chown(t, link)
			}, 0, "keys.db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cotal")
			tt.prepare(t, dir)
			was, err := SecureDir(dir)
			if tt.refused != "" {
				if !errors.Is(err, ErrUnsafePath) || !strings.Contains(err.Error(), tt.refused) {
					t.Fatalf("SecureDir = %v; want ErrUnsafePath mentioning %q", err, tt.refused)
				}
				return
			}
			if err != nil || was != tt.was {
				t.Fatalf("SecureDir = %04o, %v; want %04o, nil", was, err, tt.was)
			}
			if got := mode(t, dir); got != 0o700 {
				t.Fatalf("data directory mode = %04o after SecureDir, want 0700", got)
			}
		})
	}
}

func mkdir(t *testing.T, dir string, perm fs.FileMode) {
	t.Helper()
	if err := os.Mkdir(dir, perm); err != nil {
		t.Fatal(err)
	}
	chmod(t, dir, perm) // Mkdir's mode passes through the umask
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
