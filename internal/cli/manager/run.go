package manager

import (
	"context"
	"log/slog"
	"sync"

	"github.com/cotal-go/cotal/space"
)

// Run serves the manager service of every space of m on a connection of its own
// (space.Mesh.ManagerConn), with sup running the agents, and returns once each one listens.
// A space it cannot serve is logged and left out: its agents are refused by the broker's
// no-responders instead. stop ends the services and waits for the requests they serve.
func Run(ctx context.Context, m *space.Mesh, sup Supervisor, log *slog.Logger) (stop func()) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, name := range m.Spaces() {
		nc, err := m.ManagerConn(name)
		if err != nil {
			log.Error("the manager service of a space does not run", "space", name, "err", err)
			continue
		}
		ready := make(chan struct{})
		done := make(chan struct{})
		wg.Go(func() {
			defer nc.Close()
			defer close(done)
			err := Serve(ctx, Options{Conn: nc, Space: name, Sup: sup, Credentials: m.Credentials, Log: log},
				func() { close(ready) })
			if err != nil {
				log.Error("the manager service stopped", "space", name, "err", err)
			}
		})
		select {
		case <-ready:
		case <-done:
		}
	}
	return func() {
		cancel()
		wg.Wait()
	}
}
