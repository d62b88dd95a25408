package supervisor

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// procStat is what /proc/PID/stat says of a process: its group and its start time in clock
// ticks since boot (fields 5 and 22, proc(5)).
type procStat struct {
	pgrp  int
	start uint64
}

func readStat(pid int) (procStat, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, false
	}
	// The command name, field 2, is in parentheses and may hold spaces or ')': the fields
	// after the last ')' start at field 3.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := bytes.Fields(data[i+1:])
	if len(f) < 20 {
		return procStat{}, false
	}
	pgrp, err1 := strconv.Atoi(string(f[2]))
	start, err2 := strconv.ParseUint(string(f[19]), 10, 64)
	if err1 != nil || err2 != nil {
		return procStat{}, false
	}
	return procStat{pgrp: pgrp, start: start}, true
}

// startTime is pid's start time, 0 when it cannot be read.
func startTime(pid int) uint64 {
	st, _ := readStat(pid)
	return st.start
}

// leftOf says whether the group a supervisor listed still has processes: its leader, with the
// start time listed, or any process of the group started no earlier (a child whose leader
// died, the pipe of its output gone). A process group's id is not reused while the group has
// members, so a member started after the leader is one of its children.
func leftOf(pid, pgid int, start uint64) bool {
	if start == 0 {
		return false
	}
	if st, ok := readStat(pid); ok && st.start == start {
		return true
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		p, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if st, ok := readStat(p); ok && st.pgrp == pgid && st.start >= start {
			return true
		}
	}
	return false
}
