package broker

import (
	"fmt"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"

	"github.com/cotal-go/cotal/wire"
)

// MaxPullBatch is the most messages one pull request may ask a consumer for; a larger
// request is refused (409 Exceeded MaxRequestBatch). A pull's reply subject is the
// requester's to choose, so it bounds what one request can make the broker send to another
// subscriber. It is above every batch cotal and the reference client ask for (256) and
// nats.go's default (500).
const MaxPullBatch = 1000

// serverOptions translates a validated Config into nats-server options.
func (b *Broker) serverOptions(storeDir string) (*server.Options, error) {
	cfg := b.cfg
	opts := &server.Options{
		ServerName: cfg.ServerName,
		// An embedded server must never take over the process's signals (SIGINT would exit).
		NoSigs:                 true,
		MaxControlLine:         wire.MaxControlLine,
		JetStream:              true,
		StoreDir:               storeDir,
		SyncAlways:             cfg.Sync == SyncAlways,
		DisableJetStreamBanner: true,
		// The short first PING (2 s after accept) can reach a client whose CONNECT is still
		// being answered on a loaded machine, and nats.go then fails the connect with
		// "expected 'PONG', got 'PING'"; the regular interval is enough to find dead clients.
		DisableShortFirstPing: true,
		JetStreamLimits:       server.JSLimitOpts{MaxRequestBatch: MaxPullBatch},
		// A lost cluster peer or hub is dialled again every second on each route of its pool;
		// logging each attempt wrote several ERROR lines a second. The first failure is
		// logged, then one in ReconnectErrorReports.
		ReconnectErrorReports: ReconnectErrorReports,
	}
	if cfg.Sync == SyncInterval {
		opts.SyncInterval = cfg.SyncInterval
	}
	if err := listenOptions(cfg, opts); err != nil {
		return nil, err
	}
	if err := clusterOptions(cfg, opts); err != nil {
		return nil, err
	}
	if err := leafOptions(cfg, opts); err != nil {
		return nil, err
	}
	if b.trust != nil {
		opts.TrustedOperators = []*jwt.OperatorClaims{b.trust.operator}
		opts.SystemAccount = b.trust.system
		opts.AccountResolver = b.resolver
	}
	return opts, nil
}

// listenOptions sets the client listener, its TLS, and the monitoring listener. Port 0 means
// "pick a free port", which nats-server spells RANDOM_PORT (its 0 means the default port).
func listenOptions(cfg Config, opts *server.Options) error {
	// DontListen only keeps nats-server's Start from running AcceptLoop: Host and Port stay
	// set, so Broker.Listen can run AcceptLoop on them later (see listen.go).
	opts.DontListen = cfg.Listen == "" || cfg.DeferListen
	if cfg.Listen != "" {
		host, port, err := splitHostPort(cfg.Listen)
		if err != nil {
			return fmt.Errorf("%w: Listen %q: %w", ErrInvalidConfig, cfg.Listen, err)
		}
		opts.Host, opts.Port = host, randomIfZero(port)
	}
	if cfg.HTTP != "" {
		host, port, err := splitHostPort(cfg.HTTP)
		if err != nil {
			return fmt.Errorf("%w: HTTP %q: %w", ErrInvalidConfig, cfg.HTTP, err)
		}
		opts.HTTPHost, opts.HTTPPort = host, randomIfZero(port)
	}
	if cfg.TLSCert != "" {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: cfg.TLSCert, KeyFile: cfg.TLSKey})
		if err != nil {
			return fmt.Errorf("%w: TLSCert %s, TLSKey %s: %w: give a PEM certificate and its matching private key",
				ErrTLS, cfg.TLSCert, cfg.TLSKey, err)
		}
		// A TLS config on the client listener makes nats-server require TLS from every TCP
		// client; agents authenticate with their JWT, not a client certificate.
		opts.TLSConfig = tc
		opts.TLSVerify = false
	}
	return nil
}

func randomIfZero(port int) int {
	if port == 0 {
		return server.RANDOM_PORT
	}
	return port
}
