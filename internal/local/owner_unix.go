//go:build unix

package local

import (
	"io/fs"
	"syscall"
)

// owner is the uid that owns the file info describes; known is false when the system does
// not say.
func owner(info fs.FileInfo) (uid int, known bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
