//go:build !linux

package bench

import "time"

// processCPUOf is not available here: the path rows report no mesh CPU.
func processCPUOf(int) (time.Duration, bool) { return 0, false }
