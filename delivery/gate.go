package delivery

import (
	"context"
	"sync"
)

// gate is open while a cache is current: its watch has delivered every initial value and is
// still running. Readers that must not act on a stale or partial view wait for it.
type gate struct {
	mu   sync.Mutex
	open bool
	ch   chan struct{} // closed while open
}

func newGate() *gate { return &gate{ch: make(chan struct{})} }

// set opens or closes the gate.
func (g *gate) set(open bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case open && !g.open:
		close(g.ch)
	case !open && g.open:
		g.ch = make(chan struct{})
	}
	g.open = open
}

// isOpen reports whether the gate is open now.
func (g *gate) isOpen() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open
}

// wait blocks until the gate is open or ctx ends.
func (g *gate) wait(ctx context.Context) error {
	g.mu.Lock()
	ch := g.ch
	g.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
