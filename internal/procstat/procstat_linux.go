package procstat

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// clockTick is the unit of the times in /proc/PID/stat (USER_HZ, 100 on every Linux build Go
// supports).
const clockTick = 10 * time.Millisecond

// Read reads pid's stat; false for a process that is gone or cannot be read.
func Read(pid int) (Stat, bool) {
	if pid <= 0 {
		return Stat{}, false
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Stat{}, false
	}
	return parse(data)
}

// parse reads a /proc/PID/stat line. The command name, field 2, is in parentheses and may hold
// spaces or ')': the fields after the last ')' start at field 3.
func parse(data []byte) (Stat, bool) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return Stat{}, false
	}
	f := bytes.Fields(data[i+1:])
	if len(f) < 20 {
		return Stat{}, false
	}
	pgrp, err1 := strconv.Atoi(string(f[2]))
	utime, err2 := strconv.ParseInt(string(f[11]), 10, 64)
	stime, err3 := strconv.ParseInt(string(f[12]), 10, 64)
	start, err4 := strconv.ParseUint(string(f[19]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return Stat{}, false
	}
	return Stat{State: f[0][0], Pgrp: pgrp, Start: start, CPU: time.Duration(utime+stime) * clockTick}, true
}

// All reads every process this user may see, by pid.
func All() map[int]Stat {
	out := map[int]Stat{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if st, ok := Read(pid); ok {
			out[pid] = st
		}
	}
	return out
}
