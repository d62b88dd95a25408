package provisioner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteCredsFile writes c's .creds text to path with mode 0600, replacing a regular file
// atomically (a reader sees the old file or the new one, never part of either). It refuses
// a path that is a symlink or not a regular file with ErrUnsafePath, so a planted link can
// neither redirect the seed nor widen its mode. The directory must exist.
func WriteCredsFile(path string, c *Credential) error {
	data, err := c.Creds()
	if err != nil {
		return fmt.Errorf("format credentials for %s: %w", path, err)
	}
	return WriteSecretFile(path, data)
}

// WriteSecretFile writes data to path with the guarantees of WriteCredsFile. Every file that
// holds a secret is written with it: credentials minted by a running mesh, the cluster trust
// and backstop files, the monitoring token. Another node or command reading the file while it
// is replaced sees the old file or the new one, never an empty or partial one.
func WriteSecretFile(path string, data []byte) error {
	switch fi, err := os.Lstat(path); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("inspect %s: %w", path, err)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%w: %s is a %s", ErrUnsafePath, path, fileKind(fi.Mode()))
	}
	// CreateTemp opens with O_EXCL and mode 0600, so nobody else can open the file while the
	// seed is written; the rename replaces path itself, never what it might point to.
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	if err := writeSync(f, data); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writeSync enforces mode 0600, writes data, syncs and closes f.
func writeSync(f *os.File, data []byte) error {
	err := f.Chmod(0o600)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

func fileKind(m fs.FileMode) string {
	if m&fs.ModeSymlink != 0 {
		return "symlink"
	}
	return "non-regular file (" + m.Type().String() + ")"
}
