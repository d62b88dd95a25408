package procstat

import (
	"bytes"
	"fmt"
	"os"
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
	return Stat{Pgrp: pgrp, Start: start, CPU: time.Duration(utime+stime) * clockTick}, true
}
