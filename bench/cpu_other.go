//go:build !unix

package bench

import "time"

// processCPU is not available here: the presence workload reports no CPU share.
func processCPU() (time.Duration, bool) { return 0, false }
