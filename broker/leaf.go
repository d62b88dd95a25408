package broker

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Leaf links the broker to other NATS servers as leaf nodes (docs/accounts.md "Leaf links"): a
// hub accepts leaf nodes on Listen, a leaf (a laptop) connects to its hubs through Remotes.
// Each remote binds one local account to the hub account its credentials belong to, and only
// the subjects both sides let through cross: the hub's permissions of the remote's user, this
// side's LeafRemote.DenyImports and DenyExports.
type Leaf struct {
	// Listen is the leaf node listener "host:port" a hub accepts leaf nodes on; port 0 picks a
	// free one (read it back with LeafURL). Empty runs none. It takes TLS when the client
	// listener does (Config.TLSCert), with the same certificate.
	Listen string
	// Remotes are the hubs this server connects to as a leaf node, one account each. A remote
	// that cannot be reached is retried every ReconnectInterval for as long as the server runs.
	Remotes []LeafRemote
	// Domain is this server's JetStream domain; empty keeps none. A leaf names its own so that
	// its JetStream is never taken for the hub's: its API stays $JS.API inside this server, and
	// is $JS.<Domain>.API from anywhere else.
	Domain string
	// ReconnectInterval is how long a remote waits between attempts; default 1 s
	// (nats-server's).
	ReconnectInterval time.Duration
}

// LeafRemote is one leaf node connection to a hub.
type LeafRemote struct {
	// URL is the hub's leaf node listener: "nats-leaf://host:port", "nats://host:port", or
	// "tls://host:port" for a hub whose listener takes TLS (verified against the system roots).
	URL string
	// LocalAccount is the public key of the local account the link binds; it must be one of
	// Config.Accounts.
	LocalAccount string
	// Credentials is the .creds file of a user of the hub's account; nats-server reads it at
	// every connect, so a re-minted file takes effect at the next reconnect.
	Credentials string
	// DenyImports are subjects this server never takes from the hub, whatever the hub sends.
	DenyImports []string
	// DenyExports are subjects this server never sends to the hub, whatever the hub asks for.
	DenyExports []string
}

// defaultLeafReconnect is nats-server's own interval between attempts to reach a remote.
const defaultLeafReconnect = time.Second

// validateLeaf checks the leaf node fields.
func (c Config) validateLeaf() error {
	if c.Leaf == nil {
		return nil
	}
	if c.Open && (c.Leaf.Listen != "" || len(c.Leaf.Remotes) > 0) {
		return fmt.Errorf("Leaf is set together with Open: a leaf link binds operator accounts, so it runs in operator mode only")
	}
	if c.Leaf.Listen != "" {
		if _, _, err := splitHostPort(c.Leaf.Listen); err != nil {
			return fmt.Errorf("Leaf.Listen %q: %w: use \"host:port\" for the leaf node listener", c.Leaf.Listen, err)
		}
	}
	if c.Leaf.ReconnectInterval < 0 {
		return fmt.Errorf("Leaf.ReconnectInterval is %v: set a positive interval (default %v)", c.Leaf.ReconnectInterval, defaultLeafReconnect)
	}
	for i, r := range c.Leaf.Remotes {
		if _, err := leafURL(r.URL); err != nil {
			return fmt.Errorf("Leaf.Remotes[%d].URL: %w", i, err)
		}
		if _, ok := c.Accounts[r.LocalAccount]; !ok {
			return fmt.Errorf("Leaf.Remotes[%d].LocalAccount %q is not one of Accounts: bind an account the broker runs", i, r.LocalAccount)
		}
		if r.Credentials == "" {
			return fmt.Errorf("Leaf.Remotes[%d].Credentials is empty: give the .creds file the hub issued for this link", i)
		}
	}
	return nil
}

// leafURL parses a remote's URL, refusing the schemes nats-server would not dial.
func leafURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%q: %w: use nats-leaf://host:port or tls://host:port", raw, err)
	}
	switch u.Scheme {
	case "nats-leaf", "nats", "tls":
	default:
		return nil, fmt.Errorf("%q has scheme %q: use nats-leaf://host:port, or tls://host:port for a hub that takes TLS", raw, u.Scheme)
	}
	if u.Host == "" || u.Port() == "" {
		return nil, fmt.Errorf("%q names no host:port: use nats-leaf://host:port", raw)
	}
	return u, nil
}

// leafOptions sets the leaf node listener, the remotes and the JetStream domain.
func leafOptions(cfg Config, opts *server.Options) error {
	l := cfg.Leaf
	if l == nil {
		return nil
	}
	opts.JetStreamDomain = l.Domain
	opts.LeafNode.ReconnectInterval = defaultLeafReconnect
	if l.ReconnectInterval > 0 {
		opts.LeafNode.ReconnectInterval = l.ReconnectInterval
	}
	if l.Listen != "" {
		host, port, err := splitHostPort(l.Listen)
		if err != nil {
			return err
		}
		opts.LeafNode.Host, opts.LeafNode.Port = host, randomIfZero(port)
		if opts.TLSConfig != nil {
			// The client listener's certificate; a copy, so neither listener sees the other's
			// changes.
			opts.LeafNode.TLSConfig = opts.TLSConfig.Clone()
		}
	}
	for _, r := range l.Remotes {
		u, err := leafURL(r.URL)
		if err != nil {
			return err
		}
		remote := &server.RemoteLeafOpts{LocalAccount: r.LocalAccount, URLs: []*url.URL{u}, Credentials: r.Credentials,
			DenyImports: r.DenyImports, DenyExports: r.DenyExports}
		if u.Scheme == "tls" {
			remote.TLS, remote.TLSConfig = true, &tls.Config{MinVersion: tls.VersionTLS12}
		}
		opts.LeafNode.Remotes = append(opts.LeafNode.Remotes, remote)
	}
	return nil
}

// LeafURL returns the leaf node listener's "nats-leaf://" URL with the port actually bound
// ("tls://" when it takes TLS), or "" without one.
func (b *Broker) LeafURL() string {
	if b.cfg.Leaf == nil || b.cfg.Leaf.Listen == "" {
		return ""
	}
	v, err := b.srv.Varz(nil)
	if err != nil || v.LeafNode.Port <= 0 {
		return ""
	}
	addr := &net.TCPAddr{IP: net.ParseIP(v.LeafNode.Host), Port: v.LeafNode.Port}
	scheme := "nats-leaf"
	if b.cfg.TLSCert != "" {
		scheme = "tls"
	}
	return (&url.URL{Scheme: scheme, Host: dialable(addr)}).String()
}

// LeafLink is one leaf node connection up now, as this server sees it.
type LeafLink struct {
	// Account is the public key of the local account the link binds.
	Account string
	// Remote is the other server's "host:port".
	Remote string
	// RTT is the link's last measured round-trip time; zero before the first.
	RTT time.Duration
}

// LeafLinks lists the leaf node connections up now, from nats-server's Leafz, on either side
// of the link.
func (b *Broker) LeafLinks() []LeafLink {
	lz, err := b.srv.Leafz(nil)
	if err != nil {
		return nil
	}
	links := make([]LeafLink, 0, len(lz.Leafs))
	for _, l := range lz.Leafs {
		rtt, _ := time.ParseDuration(l.RTT)
		links = append(links, LeafLink{Account: l.Account, Remote: net.JoinHostPort(l.IP, strconv.Itoa(l.Port)), RTT: rtt})
	}
	return links
}
