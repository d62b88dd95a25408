package provisioner

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/jwt/v2"
)

func TestCredsFileText(t *testing.T) {
	s := openStore(t)
	c := mint(t, s, MintRequest{})
	text, err := c.Creds()
	if err != nil {
		t.Fatal(err)
	}
	token, err := jwt.ParseDecoratedJWT(text)
	if err != nil || token != c.JWT {
		t.Errorf("ParseDecoratedJWT = %v, JWT matches %v", err, token == c.JWT)
	}
	kp, err := jwt.ParseDecoratedUserNKey(text)
	if err != nil {
		t.Fatal(err)
	}
	if pub, _ := kp.PublicKey(); pub != c.ID {
		t.Errorf("creds seed belongs to %s, want %s", pub, c.ID)
	}
}

func TestWriteCredsFile(t *testing.T) {
	s := openStore(t)
	c := mint(t, s, MintRequest{})
	want, _ := c.Creds()
	check := func(t *testing.T, path string) {
		t.Helper()
		got, err := os.ReadFile(path)
		if err != nil || string(got) != string(want) {
			t.Fatalf("ReadFile = %v, content matches %v", err, string(got) == string(want))
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
			t.Errorf("mode %o, want 600", fi.Mode().Perm())
		}
	}
	t.Run("a new file is written with mode 0600", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ada.creds")
		if err := WriteCredsFile(path, c); err != nil {
			t.Fatal(err)
		}
		check(t, path)
	})
	t.Run("an existing wider file is replaced with mode 0600", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ada.creds")
		if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := WriteCredsFile(path, c); err != nil {
			t.Fatal(err)
		}
		check(t, path)
	})
	t.Run("a symlink is refused and its target untouched", func(t *testing.T) {
		dir := t.TempDir()
		target, link := filepath.Join(dir, "target"), filepath.Join(dir, "ada.creds")
		if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		if err := WriteCredsFile(link, c); !errors.Is(err, ErrUnsafePath) {
			t.Fatalf("WriteCredsFile(symlink) = %v, want ErrUnsafePath", err)
		}
		if got, _ := os.ReadFile(target); string(got) != "keep" {
			t.Errorf("target now holds %q", got)
		}
	})
	t.Run("a directory is refused", func(t *testing.T) {
		if err := WriteCredsFile(t.TempDir(), c); !errors.Is(err, ErrUnsafePath) {
			t.Errorf("WriteCredsFile(dir) = %v, want ErrUnsafePath", err)
		}
	})
	t.Run("no temporary file is left behind", func(t *testing.T) {
		dir := t.TempDir()
		if err := WriteCredsFile(filepath.Join(dir, "ada.creds"), c); err != nil {
			t.Fatal(err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("directory holds %d entries, want 1", len(entries))
		}
	})
}
