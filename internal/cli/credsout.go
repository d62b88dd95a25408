package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// errCredsOut: the .creds output path cannot or must not be written.
var errCredsOut = errors.New("cannot write the credential")

// checkCredsOut refuses, before anything is minted, an output path that mint must not
// overwrite (an existing file, without force) or cannot write (a directory that does not exist
// or does not let us create a file). A probe file, removed at once, proves the directory is
// writable; errors name the path the user gave, never a temporary one.
func checkCredsOut(out string, force bool) error {
	switch fi, err := os.Lstat(out); {
	case err == nil && fi.IsDir():
		return fmt.Errorf("%w: %s is a directory; pass --out with a file name", errCredsOut, out)
	case err == nil && !force:
		return fmt.Errorf("%w: %s exists; pass --force to replace it, or another --out", errCredsOut, out)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s: %w", errCredsOut, out, pathCause(err))
	}
	dir := filepath.Dir(out)
	f, err := os.CreateTemp(dir, ".cotal-mint-*")
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: the directory %s does not exist; create it or pass another --out", errCredsOut, dir)
	}
	if err != nil {
		return fmt.Errorf("%w: cannot create a file in %s: %w", errCredsOut, dir, pathCause(err))
	}
	return errors.Join(f.Close(), os.Remove(f.Name()))
}

// pathCause is the cause of a file system error without the path it names, which may be a
// temporary file's.
func pathCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
