package admin

import (
	"context"
	"errors"
	"fmt"
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

	mu      sync.Mutex
	serving bool
	served  chan struct{} // closed when the serving goroutine returns
}

// Listen binds the admin socket of dir (see the package doc for its safety) without
// answering yet. Binding before the mesh starts lets a command that finds the socket wait on
// it, instead of reaching for the key store the starting mesh is about to lock: connections
// queue in the socket's backlog until Serve.
func Listen(dir string) (*Server, error) {
	ln, path, err := listenSocket(dir)
	if err != nil {
		return nil, err
	}
	return &Server{ln: ln, path: path, served: make(chan struct{})}, nil
}

// Serve starts answering requests with m, until Close. It returns at once.
func (s *Server) Serve(m *space.Mesh) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.serving {
		return
	}
	s.serving = true
	s.srv = &http.Server{Handler: routes(m), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.served)
		_ = s.srv.Serve(s.ln)
	}()
}

// Path is the socket's path.
func (s *Server) Path() string { return s.path }

// Close stops answering, waits for the requests in flight until ctx ends, and removes the
// socket. Connections still queued before Serve are refused.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	serving := s.serving
	s.serving = true // a Serve after Close must not start
	s.mu.Unlock()
	var err error
	if serving && s.srv != nil {
		err = s.srv.Shutdown(ctx)
		<-s.served
	} else if cerr := s.ln.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
		err = cerr
	}
	if rerr := os.Remove(s.path); rerr != nil && !os.IsNotExist(rerr) {
		err = errors.Join(err, rerr)
	}
	if err != nil {
		return fmt.Errorf("close admin socket: %w", err)
	}
	return nil
}
