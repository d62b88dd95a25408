package broker

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/nats-io/jwt/v2"
)

// SyncMode says when JetStream flushes its file store to stable storage.
type SyncMode string

const (
	// SyncAlways fsyncs every write before it is acknowledged: nothing acknowledged is lost on
	// power failure, at the cost of write latency. The default for a persistent mesh.
	SyncAlways SyncMode = "always"
	// SyncInterval fsyncs every Config.SyncInterval: faster, but a power failure (not a process
	// crash) can lose up to one interval of acknowledged writes.
	SyncInterval SyncMode = "interval"
)

// Config configures one embedded nats-server. Build it from DefaultConfig, then set the store
// and either Open or the operator trust chain.
type Config struct {
	// StoreDir is the JetStream store directory, created 0700 when missing. Required unless
	// Memory. The broker locks it for as long as it runs (see doc.go).
	StoreDir string
	// Memory asks for a throwaway mesh instead of StoreDir: the broker keeps its store in a
	// private temporary directory deleted at Shutdown, so nothing survives a restart. The
	// caller still chooses each stream's storage: memory streams never touch the disk and are
	// the fastest; file streams work too but only live as long as the broker.
	Memory bool
	// Listen is the client "host:port"; port 0 picks a free port (read it back with ClientURL).
	// Empty means no TCP listener at all: clients connect in process only (InProcess).
	Listen string
	// DeferListen leaves the Listen port closed when Start returns, so the caller can prepare
	// the server through in-process connections (streams, consumers, its own services) before
	// any TCP client can connect; Broker.Listen opens it. Default false: Start opens it.
	DeferListen bool
	// TLSCert and TLSKey are PEM files. When set, TLS is required on the TCP listener; in-process
	// connections stay plaintext. Client certificates are not verified.
	TLSCert, TLSKey string
	// HTTP is the optional monitoring "host:port" (nats-server's /varz, /connz, /jsz, ...);
	// port 0 picks a free port. The endpoint has no authentication: bind it to localhost.
	HTTP string
	// Sync is the JetStream file-store durability mode; default SyncAlways.
	Sync SyncMode
	// SyncInterval is the flush period under SyncInterval; default 2 minutes (nats-server's).
	SyncInterval time.Duration
	// Logger receives nats-server's log, notices at Info (see doc.go); nil means slog.Default().
	Logger *slog.Logger
	// Debug turns on nats-server debug lines, logged at slog.LevelDebug. Default off.
	Debug bool
	// Trace turns on nats-server protocol tracing (every message), logged at slog.LevelDebug.
	// Very verbose; for diagnosing a client only. Default off.
	Trace bool
	// Open runs an unauthenticated development mesh: no operator, every client in one
	// account with JetStream. SPEC §9's security claims do not hold. Excludes OperatorJWT.
	Open bool
	// OperatorJWT is the operator JWT of decentralized auth (SPEC §9). Required unless Open.
	OperatorJWT string
	// SystemAccount is the public key of the system account; empty means the one named in the
	// operator JWT. Its JWT must be in Accounts and must not enable JetStream.
	SystemAccount string
	// Accounts maps account public keys to account JWTs signed by the operator or one of its
	// signing keys, the system account's included. An account JWT without JetStream limits
	// gives that account no JetStream at all.
	Accounts map[string]string
	// ServerName names the server in monitoring and logs; default "cotal".
	ServerName string
	// ReadyTimeout bounds how long Start waits for connections and JetStream; default 30 s.
	ReadyTimeout time.Duration
	// Cluster joins a NATS cluster of cotal nodes (see Cluster); nil runs one server alone.
	Cluster *Cluster
	// Leaf accepts leaf nodes, or connects to hubs as one (see Leaf); nil does neither.
	Leaf *Leaf
	// SystemUserJWT and SystemUserSeed are a user of the system account the broker connects
	// as, in process: to watch connect events (ConnectionsPerUser) and, on a cluster node, to
	// send account updates to every node (UpdateAccount). Empty in open mode and on a cluster
	// node without the key store, which then neither caps users nor sends updates.
	SystemUserJWT, SystemUserSeed string
	// ConnectionsPerUser caps the client connections one user (one nkey) of CappedAccounts
	// may hold on this server at once; the connections past it are closed, newest first, as
	// soon as the server reports them (see userconns.go). Zero caps nothing; a positive value
	// needs SystemUserJWT. Users of other accounts (the caller's own) are never capped.
	ConnectionsPerUser int
	// CappedAccounts are the public keys of the accounts whose users ConnectionsPerUser caps.
	CappedAccounts []string
	// ViolationLogInterval rate-limits the refusal lines a client can provoke at will
	// (permissions violations, payload over the limit, connections past the account's
	// limit): per identity and kind, the first line logs at once and the rest within the
	// interval are summarised in one line with their count. Default 10 s; zero logs every line.
	ViolationLogInterval time.Duration
}

// Defaults applied by DefaultConfig.
const (
	defaultSyncInterval = 2 * time.Minute
	defaultReadyTimeout = 30 * time.Second
	defaultServerName   = "cotal"
	// DefaultViolationLogInterval is Config.ViolationLogInterval's default.
	DefaultViolationLogInterval = 10 * time.Second
	// ReconnectErrorReports is how many failed dials of a lost route or leaf link make one
	// log line after the first: one a minute at nats-server's one dial a second.
	ReconnectErrorReports = 60
)

// DefaultConfig returns a configuration with SyncAlways, no listener, no monitoring, the
// default name and timeouts. StoreDir (or Memory) and the auth mode are left to the caller.
func DefaultConfig() Config {
	return Config{
		Sync:         SyncAlways,
		SyncInterval: defaultSyncInterval,
		ServerName:   defaultServerName,
		ReadyTimeout: defaultReadyTimeout,

		ViolationLogInterval: DefaultViolationLogInterval,
	}
}

// Validate checks the configuration without touching the disk or the network. Every error
// wraps ErrInvalidConfig and names the field and the fix. Start calls it.
func (c Config) Validate() error {
	checks := []func() error{c.validateStore, c.validateNetwork, c.validateSync, c.validateAuth, c.validateCluster,
		c.validateLeaf, c.validateUserCap}
	for _, check := range checks {
		if err := check(); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	}
	return nil
}

func (c Config) validateStore() error {
	if c.StoreDir == "" && !c.Memory {
		return fmt.Errorf("StoreDir is empty: set it to the JetStream store directory, or set Memory for a throwaway mesh")
	}
	if c.StoreDir != "" && c.Memory {
		return fmt.Errorf("both StoreDir and Memory are set: keep StoreDir for a persistent mesh or Memory for a throwaway one")
	}
	if strings.ContainsFunc(c.ServerName, unicode.IsSpace) {
		return fmt.Errorf("ServerName %q contains white space, which nats-server refuses: use a single word", c.ServerName)
	}
	if c.ReadyTimeout <= 0 {
		return fmt.Errorf("ReadyTimeout is %v: set a positive duration (default %v)", c.ReadyTimeout, defaultReadyTimeout)
	}
	if c.ViolationLogInterval < 0 {
		return fmt.Errorf("ViolationLogInterval is %v: set a positive interval (default %v), or zero to log every refusal", c.ViolationLogInterval, DefaultViolationLogInterval)
	}
	return nil
}

func (c Config) validateNetwork() error {
	if c.Listen != "" {
		if _, _, err := splitHostPort(c.Listen); err != nil {
			return fmt.Errorf("Listen %q: %w: use \"host:port\" (port 0 picks a free one) or \"\" for no listener", c.Listen, err)
		}
	}
	if c.HTTP != "" {
		if _, _, err := splitHostPort(c.HTTP); err != nil {
			return fmt.Errorf("HTTP %q: %w: use \"host:port\" (port 0 picks a free one) or \"\" for no monitoring", c.HTTP, err)
		}
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return fmt.Errorf("only one of TLSCert and TLSKey is set: set both PEM files, or neither for plaintext")
	}
	if c.TLSCert != "" && c.Listen == "" {
		return fmt.Errorf("TLSCert is set but Listen is empty: TLS protects the TCP listener, so set Listen or drop TLSCert/TLSKey")
	}
	return nil
}

func (c Config) validateSync() error {
	switch c.Sync {
	case SyncAlways:
		return nil
	case SyncInterval:
		if c.SyncInterval <= 0 {
			return fmt.Errorf("SyncInterval is %v with Sync %q: set a positive flush period (default %v)", c.SyncInterval, SyncInterval, defaultSyncInterval)
		}
		return nil
	default:
		return fmt.Errorf("Sync is %q: use %q or %q", c.Sync, SyncAlways, SyncInterval)
	}
}

func (c Config) validateAuth() error {
	if c.Open {
		if c.OperatorJWT != "" || c.SystemAccount != "" || len(c.Accounts) > 0 {
			return fmt.Errorf("Open is set together with OperatorJWT/SystemAccount/Accounts: choose open dev mode or operator mode, not both")
		}
		return nil
	}
	if c.OperatorJWT == "" {
		return fmt.Errorf("OperatorJWT is empty: set the operator JWT for decentralized auth, or set Open for an unauthenticated dev mesh")
	}
	_, _, err := c.trust()
	return err
}

func (c Config) validateUserCap() error {
	switch {
	case c.ConnectionsPerUser < 0:
		return fmt.Errorf("ConnectionsPerUser is %d: set a positive cap, or zero for none", c.ConnectionsPerUser)
	case c.ConnectionsPerUser > 0 && c.Open:
		return fmt.Errorf("ConnectionsPerUser is set together with Open: an open mesh has no users to cap; drop one")
	case c.ConnectionsPerUser > 0 && c.SystemUserJWT == "":
		return fmt.Errorf("ConnectionsPerUser is set but SystemUserJWT is empty: the cap watches connect events as a system user, so set SystemUserJWT and SystemUserSeed")
	}
	return nil
}

// splitHostPort parses "host:port" with a port in 0..65535.
func splitHostPort(hostPort string) (string, int, error) {
	host, portText, err := net.SplitHostPort(hostPort)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("port %q is not a number in 0..65535", portText)
	}
	return host, port, nil
}

// trust decodes and cross-checks the operator mode fields, returning the verified claims of
// every account.
func (c Config) trust() (*trustChain, []*jwt.AccountClaims, error) {
	op, err := jwt.DecodeOperatorClaims(c.OperatorJWT)
	if err != nil {
		return nil, nil, fmt.Errorf("OperatorJWT does not decode as an operator JWT (%w): pass the operator's JWT, not a seed or an account JWT", err)
	}
	tc := &trustChain{operator: op, system: c.SystemAccount}
	if tc.system == "" {
		tc.system = op.SystemAccount
	}
	if tc.system == "" {
		return nil, nil, fmt.Errorf("SystemAccount is empty and the operator JWT names none: set SystemAccount to the system account's public key")
	}
	if op.SystemAccount != "" && op.SystemAccount != tc.system {
		return nil, nil, fmt.Errorf("SystemAccount %s differs from the operator JWT's system account %s: use the operator's", tc.system, op.SystemAccount)
	}
	if _, ok := c.Accounts[tc.system]; !ok {
		return nil, nil, fmt.Errorf("Accounts lacks the system account %s: add its JWT", tc.system)
	}
	accounts := make([]*jwt.AccountClaims, 0, len(c.Accounts))
	for key, token := range c.Accounts {
		claims, err := tc.verifyAccount(token, key)
		if err != nil {
			return nil, nil, fmt.Errorf("Accounts[%s]: %w", key, err)
		}
		accounts = append(accounts, claims)
	}
	return tc, accounts, nil
}
