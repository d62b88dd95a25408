package space

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cotal-go/cotal/provisioner"
)

// HTTPTokenFile is the file in the data directory holding the bearer token of the
// monitoring listener: a random 256-bit token, created mode 0600 on the first start with
// HTTP set, and kept across restarts so a scraper's configuration keeps working.
const HTTPTokenFile = "http.token"

// opsServer is the mesh's one HTTP listener: /healthz, /metrics, nats-server's /varz and
// /nats/healthz open, and the endpoints that show identities behind the bearer token. Options.validate
// keeps it on loopback unless HTTPPublic is set. Every route answers only a request whose
// Host names the listener (hostAllowlist).
type opsServer struct {
	srv   *http.Server
	ln    net.Listener
	token string
	done  sync.WaitGroup
}

func (m *Mesh) serveOps(addr string) (*opsServer, error) {
	token, err := httpToken(m.dir)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("http listener %s: %w", addr, err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// A cluster node's cotal metrics carry its server name as a constant label, so series
	// scraped from every node stay apart even behind one scrape target name.
	var cotal prometheus.Registerer = reg
	if m.opts.clustered() {
		cotal = prometheus.WrapRegistererWith(prometheus.Labels{"node": m.broker.Server().Name()}, reg)
	}
	cotal.MustRegister(collector{m})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", m.handleHealthz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	ns := m.broker.Server()
	mux.HandleFunc("GET /varz", ns.HandleVarz)
	mux.HandleFunc("GET /nats/healthz", ns.HandleHealthz)
	// nats-server's monitoring endpoints that show who uses the mesh: the connections with
	// their user JWTs (/connz?auth=1), the accounts and their JWTs, the subscriptions with the
	// ids in their subjects, the consumers named after identities (/jsz). They answer only a
	// request bearing the token (SPEC §9: an agent's credential does not reach other
	// identities, so neither may a port on the same machine).
	for path, h := range map[string]http.HandlerFunc{
		"/connz": ns.HandleConnz, "/accountz": ns.HandleAccountz, "/subsz": ns.HandleSubsz,
		"/accstatz": ns.HandleAccountStatz, "/jsz": ns.HandleJsz,
	} {
		mux.HandleFunc("GET "+path, requireToken(token, h))
	}
	if m.opts.Console != nil {
		mux.Handle("/", m.opts.Console)
	}
	hosts := newHostAllowlist(m.opts.HTTP, ln.Addr().String(), m.opts.HTTPPublic)
	s := &opsServer{ln: ln, token: token, srv: &http.Server{Handler: hosts.guard(mux), ReadHeaderTimeout: 10 * time.Second}}
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.log.Error("http listener stopped", "err", err)
		}
	}()
	return s, nil
}

// hostAllowlist is the names a request to the listener may give in its Host header, each
// with the listener's port: localhost, 127.0.0.1 and [::1], the host of the configured
// address and the address bound. With HTTPPublic it adds the machine's hostname and, when
// the listener binds every interface, any address of the machine. A page under any other
// name that resolves to this machine (DNS rebinding) is refused before it reads anything:
// the browser gives the attacker's name as Host.
type hostAllowlist struct {
	port    string
	names   map[string]bool
	everyIP bool
	said    string
}

func newHostAllowlist(configured, bound string, public bool) *hostAllowlist {
	host, port, _ := net.SplitHostPort(bound)
	a := &hostAllowlist{port: port, names: map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}}
	ip := net.ParseIP(host)
	if ip != nil && !ip.IsUnspecified() {
		a.names[host] = true
	}
	if h, _, err := net.SplitHostPort(configured); err == nil && h != "" && !isUnspecified(h) {
		a.names[canonicalHost(h)] = true
	}
	if public {
		a.everyIP = isUnspecified(host)
		if name, err := os.Hostname(); err == nil {
			a.names[canonicalHost(name)] = true
		}
	}
	shown := make([]string, 0, len(a.names)+1)
	for name := range a.names {
		shown = append(shown, net.JoinHostPort(name, port))
	}
	slices.Sort(shown)
	if a.everyIP {
		shown = append(shown, "any address of this machine with port "+port)
	}
	a.said = strings.Join(shown, ", ")
	return a
}

func isUnspecified(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}

// canonicalHost is host as names compare: lower case, without brackets or a final dot.
func canonicalHost(host string) string {
	return strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
}

// allows reports whether hostport, a request's Host, names the listener.
func (a *hostAllowlist) allows(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, "80" // a Host without a port names port 80 of http
	}
	host = canonicalHost(host)
	if port != a.port || host == "" {
		return false
	}
	return a.names[host] || (a.everyIP && isLocalIP(host))
}

// isLocalIP reports whether host is an IP address of this machine, read when asked, so an
// address the machine gains after the start is one too.
func isLocalIP(host string) bool {
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	return slices.ContainsFunc(addrs, func(a net.Addr) bool {
		n, ok := a.(*net.IPNet)
		return ok && n.IP.Equal(ip)
	})
}

// guard answers h only to a request whose Host the allowlist allows, and 421 Misdirected
// Request with the names it answers to to any other.
func (a *hostAllowlist) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.allows(r.Host) {
			http.Error(w, fmt.Sprintf("refused: Host %q does not name this listener, which answers to %s only "+
				"(a page under another name that resolves here, as DNS rebinding does, must not read it): open it by one of those",
				r.Host, a.said), http.StatusMisdirectedRequest)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// requireToken answers h only to a request with "Authorization: Bearer <token>", compared
// in constant time; any other gets 401 and what to send.
func requireToken(token string, h http.HandlerFunc) http.HandlerFunc {
	want := []byte("Bearer " + token)
	return func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="cotal monitoring"`)
			http.Error(w, "this endpoint shows identities: send Authorization: Bearer <the token in "+HTTPTokenFile+" in the data directory>",
				http.StatusUnauthorized)
			return
		}
		h(w, r)
	}
}

// httpToken reads the monitoring token of dir, creating it on first use.
func httpToken(dir string) (string, error) {
	path := filepath.Join(dir, HTTPTokenFile)
	data, err := os.ReadFile(path)
	if err == nil && len(bytes.TrimSpace(data)) >= 32 {
		// A token copied in with a wider mode is narrowed, as the key store is.
		return string(bytes.TrimSpace(data)), os.Chmod(path, 0o600)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("monitoring token %s: %w", path, err)
	}
	token := rand.Text() + rand.Text()
	if err := provisioner.WriteSecretFile(path, []byte(token+"\n")); err != nil {
		return "", fmt.Errorf("monitoring token %s: %w", path, err)
	}
	return token, nil
}

// healthReply is the /healthz body: every component with "ok" or what is wrong, and on a mesh
// with leaf links each space's link, "up" or "down" (on a hub, how many leaves are linked).
// A leaf link down leaves the mesh healthy: its agents keep working among themselves.
type healthReply struct {
	Status     string            `json:"status"`
	Components map[string]string `json:"components"`
	Leaf       map[string]string `json:"leaf,omitempty"`
}

func (m *Mesh) handleHealthz(w http.ResponseWriter, _ *http.Request) {
	reply := healthReply{Status: "ok", Components: map[string]string{}, Leaf: m.leafHealth()}
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

// HTTPToken is the bearer token the monitoring listener's identity endpoints require, the
// content of HTTPTokenFile; "" without a listener.
func (m *Mesh) HTTPToken() string {
	if m.ops == nil {
		return ""
	}
	return m.ops.token
}

// URL is the listener's http:// address with the port actually bound.
func (s *opsServer) URL() string { return "http://" + s.ln.Addr().String() }

func (s *opsServer) close(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	s.done.Wait()
	return err
}
