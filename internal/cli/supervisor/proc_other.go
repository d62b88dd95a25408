//go:build !unix

package supervisor

import (
	"errors"
	"syscall"
)

// groupAttr is nil where process groups are not Unix ones: a runtime's children are not
// tracked there.
func groupAttr() *syscall.SysProcAttr { return nil }

// signalGroup cannot reach a group without Unix process groups; the leader is stopped
// through os.Process instead.
func signalGroup(int, syscall.Signal) error {
	return errors.New("process groups need a Unix system")
}

// processExists cannot tell here, so a watched process is taken to run: its credential is
// left to expire rather than revoked under a runtime that may still use it.
func processExists(int) bool { return true }
