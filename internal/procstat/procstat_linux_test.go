package procstat

import (
	"os"
	"syscall"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Stat
		ok   bool
	}{
		{"a plain command", "42 (cotal) S 1 40 40 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 987654 0 0",
			Stat{State: 'S', Pgrp: 40, Start: 987654, CPU: 3 * time.Second}, true},
		{"a command name with spaces and parentheses", "7 (a) b (c)) R 1 9 9 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 55 0 0",
			Stat{State: 'R', Pgrp: 9, Start: 55, CPU: 30 * time.Millisecond}, true},
		{"a short line", "7 (x) R 1 9", Stat{}, false},
		{"no command name", "garbage", Stat{}, false},
		{"a field that is not a number", "7 (x) R 1 z 9 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 55", Stat{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parse([]byte(tt.line))
			if ok != tt.ok || got != tt.want {
				t.Errorf("parse = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestReadThisProcess(t *testing.T) {
	st, ok := Read(os.Getpid())
	if !ok {
		t.Fatal("cannot read this process")
	}
	if st.Pgrp != syscall.Getpgrp() || st.Start == 0 {
		t.Errorf("Read = %+v, want group %d and a start time", st, syscall.Getpgrp())
	}
	if _, ok := Read(0); ok {
		t.Error("Read(0) succeeded")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("42 (cotal) S 1 40 40 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 987654 0 0"))
	f.Fuzz(func(t *testing.T, data []byte) { _, _ = parse(data) })
}

func TestAllHoldsThisProcess(t *testing.T) {
	if st, ok := All()[os.Getpid()]; !ok || st.Pgrp != syscall.Getpgrp() {
		t.Errorf("All()[self] = %+v, %v", st, ok)
	}
}
