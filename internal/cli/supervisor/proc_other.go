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
