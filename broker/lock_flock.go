//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package broker

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on f without waiting. The kernel drops it when f is
// closed or the process dies, so a crashed broker never leaves a stale lock behind.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return ErrStoreLocked
	}
	return err
}
