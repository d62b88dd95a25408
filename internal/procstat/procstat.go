// Package procstat reads what Linux's /proc/PID/stat says of a process (proc(5)): its process
// group, its start time and the CPU time it has used. Elsewhere nothing can be read.
package procstat

import "time"

// Stat is one reading of a process.
type Stat struct {
	// State is the state letter, field 3: R, S, D, Z (exited, not yet waited for), ...
	State byte
	// Pgrp is the process group, field 5.
	Pgrp int
	// Start is the start time in clock ticks since boot, field 22: with the pid, it tells a
	// process from a later one that took its number.
	Start uint64
	// CPU is the user and system time used so far, fields 14 and 15, to the clock tick.
	CPU time.Duration
}
