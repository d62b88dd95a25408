package bench

import (
	"context"
	"time"
)

// cpuShare measures the process's CPU time over window, as a percentage of one core. It
// reports false where the platform does not expose the process's CPU time.
func cpuShare(ctx context.Context, window time.Duration) (float64, bool) {
	c0, ok := processCPU()
	if !ok {
		return 0, false
	}
	w0 := time.Now()
	t := time.NewTimer(window)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return 0, false
	case <-t.C:
	}
	c1, _ := processCPU()
	return 100 * float64(c1-c0) / float64(time.Since(w0)), true
}
