//go:build unix

package supervisor

import (
	"errors"
	"syscall"
)

// groupAttr runs a runtime in a process group of its own, whose id is its pid.
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// signalGroup sends sig to every process of the group pgid; a group already gone is no error.
func signalGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 1 {
		return errors.New("no process group")
	}
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
