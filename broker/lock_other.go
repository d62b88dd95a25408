//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd || windows)

package broker

import "os"

// lockFile does not lock on platforms without flock or LockFileEx: there the caller's own
// lock (cotal's bbolt key store) is what keeps two brokers off one StoreDir.
func lockFile(*os.File) error { return nil }
