package bench

import (
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// bare is an embedded nats-server with JetStream and nothing of cotal's.
type bare struct {
	srv *server.Server
	dir string
}

func startBare() (*bare, error) {
	dir, err := os.MkdirTemp("", "cotal-bench-raw-")
	if err != nil {
		return nil, err
	}
	srv, err := server.NewServer(&server.Options{ServerName: "bench-raw", DontListen: true, JetStream: true,
		StoreDir: dir, NoLog: true, NoSigs: true, DisableJetStreamBanner: true})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("raw server: %w", err)
	}
	srv.Start()
	b := &bare{srv: srv, dir: dir}
	if !srv.ReadyForConnections(10 * time.Second) {
		b.shutdown()
		return nil, fmt.Errorf("raw server not ready within 10s")
	}
	return b, nil
}

// shutdown stops the server and removes its store; calling it again does nothing.
func (b *bare) shutdown() {
	if !b.srv.Running() {
		return
	}
	b.srv.Shutdown()
	b.srv.WaitForShutdown()
	_ = os.RemoveAll(b.dir)
}
