package broker

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// A user JWT has no connection limit of its own, only its account has, so one credential could
// take all of its space's connections and lock every other agent out (docs/hostile-agents.md
// "Bounded shares"). The broker caps each user of Config.CappedAccounts at
// Config.ConnectionsPerUser connections itself, from outside nats-server's connect path, which
// offers no hook between verifying a user JWT and accepting the connection (a custom
// authenticator or auth callout would replace the JWT check, not extend it). So the cap closes,
// it does not refuse: nats-server accepts the connection and publishes
// $SYS.ACCOUNT.<account>.CONNECT, the broker's system user receives it, lists the user's
// connections on this server (Connz) and closes every one past the cap, newest first (highest
// client id), with nats-server's "Kicked" reason. For that moment, about a millisecond in
// process, the extra connection can do what its credential allows; its client sees the
// connection end without an error message, and a client that reconnects is closed again each
// time. Each identity's closures write one log line and, for the rest within
// Config.ViolationLogInterval, one summary; ConnectionsClosed counts them.
//
// In a cluster every node caps the connections made to it, so one identity can hold the cap
// on each node; a node without a system user (one without the key store) caps nothing.

// connectEvents is where nats-server announces every authenticated client connection.
const connectEvents = "$SYS.ACCOUNT.*.CONNECT"

// userConnsKind is the kind under which closures are rate-limited and summarised in the log.
const userConnsKind = "connections past the per-user connection limit"

// userCap enforces Config.ConnectionsPerUser on the server it watches.
type userCap struct {
	srv      *server.Server
	max      int
	accounts map[string]bool
	b        *Broker // logs each closure through its violation limiter

	closed atomic.Int64 // connections closed since start

	mu      sync.Mutex
	pending map[userKey]string // users with a new connection to check, to their user JWT
	wake    chan struct{}      // signalled when pending gains a user
}

// userKey is one user of one account.
type userKey struct{ account, user string }

func newUserCap(b *Broker) *userCap {
	c := &userCap{srv: b.srv, max: b.cfg.ConnectionsPerUser, accounts: map[string]bool{}, b: b,
		pending: map[userKey]string{}, wake: make(chan struct{}, 1)}
	for _, a := range b.cfg.CappedAccounts {
		c.accounts[a] = true
	}
	return c
}

// connectSystem opens the broker's in-process system connection when it has a system user.
func (b *Broker) connectSystem() error {
	if b.cfg.SystemUserJWT == "" {
		return nil
	}
	nc, err := nats.Connect("", nats.InProcessServer(b.InProcess()), nats.Name("cotal:system"),
		nats.UserJWTAndSeed(b.cfg.SystemUserJWT, b.cfg.SystemUserSeed), nats.MaxReconnects(-1))
	if err != nil {
		return fmt.Errorf("connect to the system account: %w", err)
	}
	b.sys = nc
	return nil
}

// startUserCap subscribes to connect events and starts the goroutine that closes the
// connections past the cap; both end when the broker stops (the subscription with b.sys).
func (b *Broker) startUserCap() error {
	if b.cfg.ConnectionsPerUser <= 0 || b.sys == nil {
		return nil
	}
	c := newUserCap(b)
	if _, err := b.sys.Subscribe(connectEvents, c.noted); err != nil {
		return fmt.Errorf("watch connect events: %w", err)
	}
	// Connections made after Start returns are all seen: the subscription is in place once
	// the server has answered the flush.
	if err := b.sys.Flush(); err != nil {
		return fmt.Errorf("watch connect events: %w", err)
	}
	b.userCap = c
	b.watchers.Add(1)
	go func() {
		defer b.watchers.Done()
		c.run(b.stopping)
	}()
	return nil
}

// connectEvent is what the cap reads of nats-server's server.ConnectEventMsg.
type connectEvent struct {
	Server struct {
		ID string `json:"id"`
	} `json:"server"`
	Client struct {
		Account string `json:"acc"`
		User    string `json:"user"`
		JWT     string `json:"jwt"`
	} `json:"client"`
}

// noted queues the user of one connect event for a check. It runs on the subscription's
// goroutine and only records, so a burst of connects costs one check per user. Every
// connection passes through here, so the user JWT, wanted only for the name a closure logs,
// is decoded only when enforce closes something.
func (c *userCap) noted(m *nats.Msg) {
	var ev connectEvent
	if json.Unmarshal(m.Data, &ev) != nil || ev.Server.ID != c.srv.ID() {
		return // another node's connection is that node's to cap
	}
	key := userKey{ev.Client.Account, ev.Client.User}
	if !c.accounts[key.account] || key.user == "" {
		return
	}
	c.mu.Lock()
	c.pending[key] = ev.Client.JWT
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// run checks each queued user until stop is closed.
func (c *userCap) run(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-c.wake:
		}
		c.mu.Lock()
		batch := c.pending
		c.pending = map[userKey]string{}
		c.mu.Unlock()
		for key, token := range batch {
			c.enforce(key, token)
		}
	}
}

// enforce closes key's connections on this server past the cap, newest first; token is the
// user JWT of its latest connection, which names the user in the log.
func (c *userCap) enforce(key userKey, token string) {
	conns, err := c.srv.Connz(&server.ConnzOptions{Username: true, Account: key.account, User: key.user,
		Sort: server.ByCid, Limit: server.DefaultConnListSize + c.max})
	if err != nil || len(conns.Conns) <= c.max {
		return
	}
	name := ""
	if uc, err := jwt.DecodeUserClaims(token); err == nil {
		name = uc.Name
	}
	// ByCid sorts ascending: the oldest connections come first and stay.
	for _, ci := range conns.Conns[c.max:] {
		if c.srv.DisconnectClientByID(ci.Cid) != nil {
			continue // it left meanwhile
		}
		c.closed.Add(1)
		line := fmt.Sprintf("closed connection cid:%d of %s past the per-user limit of %d", ci.Cid, key.user, c.max)
		if c.b.violations.admitAs(key.user, userConnsKind, line) {
			c.b.log.Warn("closed a connection past its identity's connection limit", "identity", key.user,
				"name", name, "cid", ci.Cid, "limit", c.max, "open", conns.NumConns)
		}
	}
}

// ConnectionsClosed is how many connections the broker has closed since Start because their
// user held more than Config.ConnectionsPerUser.
func (b *Broker) ConnectionsClosed() int64 {
	if b.userCap == nil {
		return 0
	}
	return b.userCap.closed.Load()
}

// DisconnectUser closes every connection user (a user public key) of account holds on this
// server, with nats-server's "Kicked" reason, and returns how many it closed. A client that
// reconnects is not stopped by it.
func (b *Broker) DisconnectUser(account, user string) int {
	conns, err := b.srv.Connz(&server.ConnzOptions{Username: true, Account: account, User: user, Limit: server.DefaultConnListSize})
	if err != nil {
		return 0
	}
	closed := 0
	for _, ci := range conns.Conns {
		if b.srv.DisconnectClientByID(ci.Cid) == nil {
			closed++
		}
	}
	return closed
}
