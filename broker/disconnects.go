package broker

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
)

// disconnectEvents is where nats-server announces the end of every authenticated client
// connection.
const disconnectEvents = "$SYS.ACCOUNT.*.DISCONNECT"

// ErrNoSystemUser is returned by WatchDisconnects on a broker started without a system user,
// which receives no system events.
var ErrNoSystemUser = errors.New("broker: no system user")

// Disconnect is one client connection of this server that ended, as nats-server's disconnect
// event names it.
type Disconnect struct {
	// Account and User are the connection's account and user public keys.
	Account, User string
	// Server is the name of the server the connection was made to, as the Nats-Request-Info
	// header of a shared service import names it; CID is its client id there.
	Server string
	CID    uint64
	// ClientClosed is whether the client ended the connection itself (a close, a drain, or
	// its process dying: the server reads the end of the stream), rather than the server
	// (an error, a stale connection, a kick), after which the client may reconnect.
	ClientClosed bool
}

// clientClosed is nats-server's reason for a connection the client ended.
const clientClosed = "Client Closed"

// disconnectEvent is what WatchDisconnects reads of nats-server's server.DisconnectEventMsg.
type disconnectEvent struct {
	Server struct {
		Name string `json:"name"`
	} `json:"server"`
	Client struct {
		ID      uint64 `json:"id"`
		Account string `json:"acc"`
		User    string `json:"user"`
	} `json:"client"`
	Reason string `json:"reason"`
}

// WatchDisconnects calls fn, on one goroutine, for every client connection that ends from the
// moment it returns until the broker stops: those of this server in the order they ended, and
// those of the other nodes of its cluster as their events arrive. fn must not block: it holds
// up every later event.
func (b *Broker) WatchDisconnects(fn func(Disconnect)) error {
	if b.sys == nil {
		return ErrNoSystemUser
	}
	_, err := b.sys.Subscribe(disconnectEvents, func(m *nats.Msg) {
		var ev disconnectEvent
		if json.Unmarshal(m.Data, &ev) != nil {
			return
		}
		fn(Disconnect{Account: ev.Client.Account, User: ev.Client.User, Server: ev.Server.Name, CID: ev.Client.ID,
			ClientClosed: ev.Reason == clientClosed})
	})
	if err == nil {
		// Every connection that ends after the flush is reported.
		err = b.sys.Flush()
	}
	if err != nil {
		return fmt.Errorf("watch disconnect events: %w", err)
	}
	return nil
}
