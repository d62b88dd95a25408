package space

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// opsServer is the mesh's one HTTP listener: /healthz, /metrics, and nats-server's own
// monitoring endpoints (/varz, /connz, /jsz, ...) on the same port. It has no
// authentication: bind it to localhost (the default of `cotal up --http` examples).
type opsServer struct {
	srv  *http.Server
	ln   net.Listener
	done sync.WaitGroup
}

func (m *Mesh) serveOps(addr string) (*opsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("http listener %s: %w", addr, err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{m}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", m.handleHealthz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	ns := m.broker.Server()
	for path, h := range map[string]http.HandlerFunc{
		"/varz": ns.HandleVarz, "/connz": ns.HandleConnz, "/jsz": ns.HandleJsz,
		"/accountz": ns.HandleAccountz, "/subsz": ns.HandleSubsz, "/accstatz": ns.HandleAccountStatz,
		"/nats/healthz": ns.HandleHealthz,
	} {
		mux.HandleFunc("GET "+path, h)
	}
	if m.opts.Console != nil {
		mux.Handle("/", m.opts.Console)
	}
	s := &opsServer{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.log.Error("http listener stopped", "err", err)
		}
	}()
	return s, nil
}

// healthReply is the /healthz body: every component with "ok" or what is wrong.
type healthReply struct {
	Status     string            `json:"status"`
	Components map[string]string `json:"components"`
}

func (m *Mesh) handleHealthz(w http.ResponseWriter, _ *http.Request) {
	reply := healthReply{Status: "ok", Components: map[string]string{}}
	for _, c := range m.Health() {
		if c.Err != nil {
			reply.Status = "unavailable"
			reply.Components[c.Name] = c.Err.Error()
			continue
		}
		reply.Components[c.Name] = "ok"
	}
	w.Header().Set("Content-Type", "application/json")
	if reply.Status != "ok" {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(reply)
}

// URL is the listener's http:// address with the port actually bound.
func (s *opsServer) URL() string { return "http://" + s.ln.Addr().String() }

func (s *opsServer) close(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	s.done.Wait()
	return err
}
