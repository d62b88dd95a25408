// Package testlog holds what tests share to read output that other goroutines or processes
// write while the test runs: a mesh's log, a subprocess's stdout and stderr.
package testlog

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that goroutines may write to while the test reads it. The zero
// value is ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p; it never fails.
func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
