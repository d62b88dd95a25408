package cli

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"

	"github.com/cotal-go/cotal/space"
)

// listener is one TCP listener `cotal up` opens: what it is, where, and the flag that moves it.
type listener struct {
	what, addr, flag string
}

// listeners are cfg's TCP listeners with a fixed port; a port 0 is chosen free at bind time.
func listeners(cfg space.Options) []listener {
	var ls []listener
	for _, l := range []listener{
		{"client listener", cfg.Listen, "--listen"},
		{"HTTP listener", cfg.HTTP, "--http"},
		{"cluster route listener", cfg.Cluster.Listen, "--cluster-listen"},
		{"leaf node listener", cfg.Leaf.Listen, "--leaf-listen"},
	} {
		if l.addr != "" && !strings.HasSuffix(l.addr, ":0") {
			ls = append(ls, l)
		}
	}
	return ls
}

// checkPorts binds every listener of cfg at once and lets go of them, before up creates
// anything: a port another process holds then fails the start with the listener and the flag
// to change, instead of after the key store was created and nats-server printed its banner.
// Two listeners on one port are told apart from another process. A port taken between this
// check and the mesh's own bind still fails the start, with nats-server's error.
func checkPorts(cfg space.Options) error {
	var held []net.Listener
	defer func() {
		for _, ln := range held {
			_ = ln.Close()
		}
	}()
	ls := listeners(cfg)
	for i, l := range ls {
		ln, err := net.Listen("tcp", l.addr)
		if err == nil {
			held = append(held, ln)
			continue
		}
		if errors.Is(err, syscall.EADDRINUSE) {
			for _, other := range ls[:i] {
				if samePort(other.addr, l.addr) {
					return fmt.Errorf("the %s (%s) and the %s (%s) share a port; choose another with %s", other.what, other.addr, l.what, l.addr, l.flag)
				}
			}
			return fmt.Errorf("cannot open the %s: another process listens on %s; stop it or choose another with %s", l.what, l.addr, l.flag)
		}
		return fmt.Errorf("cannot open the %s on %s: %w; choose another address with %s", l.what, l.addr, err, l.flag)
	}
	return nil
}

// samePort reports whether a and b, both host:port, name one port.
func samePort(a, b string) bool {
	_, pa, errA := net.SplitHostPort(a)
	_, pb, errB := net.SplitHostPort(b)
	return errA == nil && errB == nil && pa == pb
}
