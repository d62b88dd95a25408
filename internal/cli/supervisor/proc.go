package supervisor

import "github.com/cotal-go/cotal/internal/procstat"

// startTime is pid's start time, 0 when it cannot be read: always without Linux's /proc, where
// a pid cannot be told from a later process that took its number, so Reap kills nothing there
// and only revokes the listed credentials.
func startTime(pid int) uint64 {
	st, _ := procstat.Read(pid)
	return st.Start
}

// leftOf says whether the group a supervisor listed still has processes: its leader, with the
// start time listed, or any process of the group started no earlier (a child whose leader
// died, the pipe of its output gone). A process group's id is not reused while the group has
// members, so a member started after the leader is one of its children.
func leftOf(pid, pgid int, start uint64) bool {
	if start == 0 {
		return false
	}
	if st, ok := procstat.Read(pid); ok && st.Start == start {
		return true
	}
	for _, st := range procstat.All() {
		if st.Pgrp == pgid && st.Start >= start {
			return true
		}
	}
	return false
}
