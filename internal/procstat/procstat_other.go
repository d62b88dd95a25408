//go:build !linux

package procstat

// Read cannot read a process without Linux's /proc.
func Read(int) (Stat, bool) { return Stat{}, false }

// All cannot read a process without Linux's /proc: none.
func All() map[int]Stat { return nil }
