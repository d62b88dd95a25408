package spacetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Rogue starts a plain nats-server as an attacker would: named "rogue", its client port on
// a random loopback port, logging every line (debug included) into the ServerLog it returns.
// opts carries what the attack needs (routes, leaf remotes, a cluster name; "test" if none).
// The server is shut down at cleanup; Rogue fails the test if it does not start.
func Rogue(t testing.TB, opts server.Options) (*server.Server, *ServerLog) {
	t.Helper()
	opts.ServerName, opts.Host, opts.Port, opts.NoSigs, opts.Debug = "rogue", "127.0.0.1", server.RANDOM_PORT, true, true
	if opts.Cluster.Name == "" {
		opts.Cluster.Name = "test"
	}
	srv, err := server.NewServer(&opts)
	if err != nil {
		t.Fatal(err)
	}
	log := &ServerLog{}
	srv.SetLoggerV2(log, true, false, false)
	go srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("the rogue server did not start")
	}
	return srv, log
}

// ServerLog records the log lines of a nats-server; it is a server.Logger.
type ServerLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *ServerLog) add(format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, v...))
}

// Has reports whether one line holds every one of words, which are lower case; the line's
// case is ignored.
func (l *ServerLog) Has(words ...string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		line = strings.ToLower(line)
		all := true
		for _, w := range words {
			all = all && strings.Contains(line, w)
		}
		if all {
			return true
		}
	}
	return false
}

// String is every line recorded so far, one a line.
func (l *ServerLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func (l *ServerLog) Noticef(format string, v ...any) { l.add(format, v...) }
func (l *ServerLog) Warnf(format string, v ...any)   { l.add(format, v...) }
func (l *ServerLog) Fatalf(format string, v ...any)  { l.add(format, v...) }
func (l *ServerLog) Errorf(format string, v ...any)  { l.add(format, v...) }
func (l *ServerLog) Debugf(format string, v ...any)  { l.add(format, v...) }
func (l *ServerLog) Tracef(string, ...any)           {}
