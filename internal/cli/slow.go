package cli

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// slowAfter is how long a step may wait for the mesh before the command says what it waits
// for: long enough that a healthy mesh never prompts it, short enough that a user never
// wonders whether the command hangs.
const slowAfter = 2 * time.Second

// waitFor says on w, once, when the step started now has had no answer from the mesh at addr
// for slowAfter, naming the step and how much longer the command waits (within). The
// returned stop must be called when the step ends; nothing is written after it returns.
//
// On a cluster the likely cause is a node that was lost: its streams answer nothing until
// the others elect new leaders, which takes up to about 10 s (docs/cluster.md "Removing a
// node"), so the line says so rather than leaving the user with a silent command.
func waitFor(w io.Writer, addr, step string, within time.Duration) (stop func()) {
	var mu sync.Mutex
	stopped := false
	t := time.AfterFunc(slowAfter, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		fmt.Fprintf(w, "cotal: waiting for the mesh at %s to %s (no answer for %v; giving up in %v): "+
			"a cluster that lost a node answers once its streams have elected new leaders, usually within 10 s\n",
			addr, step, slowAfter, (within - slowAfter).Round(time.Second))
	})
	return func() {
		t.Stop()
		mu.Lock()
		stopped = true
		mu.Unlock()
	}
}

// waitFor is waitFor for a step of the session's mesh; a session of no command (the MCP
// server's) says nothing.
func (s *session) waitFor(step string, within time.Duration) (stop func()) {
	w := s.stderr
	if w == nil {
		w = io.Discard
	}
	return waitFor(w, fmt.Sprintf("%s:%d", s.link.Host, s.link.Port), step, within)
}
