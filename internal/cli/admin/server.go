package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/cotal-go/cotal/space"
)

// requestTimeout bounds one request on the server, and one call on the client.
const requestTimeout = 30 * time.Second

// maxBody bounds a request body; the largest real one is a mint with its grants.
const maxBody = 1 << 20

// Server serves the admin API of one mesh on its data directory's socket.
type Server struct {
	ln   net.Listener
	path string
	srv  *http.Server

	mu     sync.Mutex
	api    http.Handler  // the routes of the mesh, set by Serve
	sup    Supervisor    // the agent routes' supervisor, set by Supervise
	ready  chan struct{} // closed by Serve, or by Close before it
	closed bool
	served chan struct{} // closed when the serving goroutine returns
}

// Listen binds the admin socket of dir (see the package doc for its safety) and answers
// GET /v1/ping at once, so that a command can tell a mesh that is starting from one that
// answers nothing at all (a stopped process). Every other request waits until Serve: binding
// before the mesh starts lets a command that finds the socket wait on it, instead of reaching
// for the key store the starting mesh is about to lock.
func Listen(dir string) (*Server, error) {
	ln, path, err := listenSocket(dir)
	if err != nil {
		return nil, err
	}
	s := &Server{ln: ln, path: path, ready: make(chan struct{}), served: make(chan struct{})}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.gate), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.served)
		_ = s.srv.Serve(s.ln)
	}()
	return s, nil
}

// Supervise has the agent routes run by sup; called before Serve, or it has no effect.
func (s *Server) Supervise(sup Supervisor) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sup = sup
}

// Serve starts answering requests with m, until Close, logging the mints, revocations and
// channel removals it makes to log (nil discards them). It returns at once.
func (s *Server) Serve(m *space.Mesh, log *slog.Logger) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.api != nil {
		return
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s.api = routes(m, s.sup, log)
	close(s.ready)
}

// gate answers a ping whatever the mesh's state, and holds every other request until Serve
// (or refuses it once the server closed first).
func (s *Server) gate(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == pingPath {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(Ping{Ready: s.handler() != nil})
		return
	}
	select {
	case <-s.ready:
	case <-r.Context().Done():
		return
	}
	api := s.handler()
	if api == nil {
		http.Error(w, "the mesh stopped before it was ready", http.StatusServiceUnavailable)
		return
	}
	api.ServeHTTP(w, r)
}

func (s *Server) handler() http.Handler {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.api
}

// Path is the socket's path.
func (s *Server) Path() string { return s.path }

// Close stops answering, waits for the requests in flight until ctx ends, and removes the
// socket. Requests still waiting for Serve are refused.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed && s.api == nil {
		close(s.ready)
	}
	s.closed = true // a Serve after Close must not start
	s.mu.Unlock()
	err := s.srv.Shutdown(ctx)
	<-s.served
	if rerr := os.Remove(s.path); rerr != nil && !os.IsNotExist(rerr) {
		err = errors.Join(err, rerr)
	}
	if err != nil {
		return fmt.Errorf("close admin socket: %w", err)
	}
	return nil
}
