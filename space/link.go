package space

import (
	"errors"
	"net"
	"net/url"
	"slices"
	"strconv"

	"github.com/cotal-go/cotal/wire"
)

// ErrNoListener is returned by Link for a mesh started without a TCP listener.
var ErrNoListener = errors.New("space: the mesh has no TCP listener; start it with a listen address to get a join link")

// Link returns the join link of space (SPEC §10): cotal://host:port/space, or cotals:// when
// the listener requires TLS. It carries no credential; clients add a .creds file. A cluster
// node without the key store gives the link of every configured space, which the node with
// the key store provisions.
func (m *Mesh) Link(space string) (string, error) {
	if _, err := m.runtime(space); err != nil && !(m.opts.member() && slices.Contains(m.opts.Spaces, space)) {
		return "", err
	}
	raw := m.broker.ClientURL()
	if raw == "" {
		return "", ErrNoListener
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	host, portStr, err := net.SplitHostPort(u.Host)
	if err != nil {
		return "", err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return "", err
	}
	return wire.Link{TLS: u.Scheme == "tls", Host: host, Port: port, Space: space}.String(), nil
}
