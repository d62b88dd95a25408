package space_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// TestAPlainNATSServerIsALeafHub links a laptop mesh to a plain nats-server in operator mode,
// its own operator with one account, through a user that holds the leaf profile's grants, as
// docs/leaf.md describes: a client of that account sees the laptop's chat and relayed
// presence live.
func TestAPlainNATSServerIsALeafHub(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	hub, client, clientCreds, leafCreds, leafID := plainHub(t)
	laptop := spacetest.New(t, func(o *space.Options) {
		o.Listen = "127.0.0.1:0"
		o.Leaf = space.LeafOptions{Hub: hub, Creds: map[string]string{"main": leafCreds}}
	})
	await.True(t, 10*time.Second, "the laptop's link to the plain hub", func() bool { return linkUp(ctx, laptop) })

	nc, err := nats.Connect(client, nats.UserCredentials(clientCreds))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	seen := make(chan *nats.Msg, 64)
	names := wire.NewNames("main")
	if _, err := nc.ChanSubscribe(names.LeafUpFilterAll(), seen); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// The subscription reaches the laptop over the link before anything is sent for it; the
	// link carries the hub's loop-detection subscription from the start, so the count alone
	// says nothing.
	await.True(t, 10*time.Second, "the hub client's interest on the laptop", func() bool {
		lz, err := laptop.Broker().Server().Leafz(&server.LeafzOptions{Subscriptions: true})
		return err == nil && len(lz.Leafs) == 1 && slices.Contains(lz.Leafs[0].Subs, names.LeafUpFilterAll())
	})
	g := provisioner.Grants{Subscribe: []string{"general"}, AllowPublish: []string{"general"}}
	l := joinAt(ctx, t, laptop, mint(t, laptop, "laptop-agent", provisioner.ProfileAgent, g), make(chan endpoint.Delivery, 64), "general")
	send(ctx, t, l, "general", "to a plain hub")
	route := wire.LeafRoute{Dir: wire.LeafUp, Leaf: leafID}
	chat, presence := names.LeafSubject(route, names.ChatSubject(l.ID(), "general")), names.LeafSubject(route, names.PresenceKVSubject(l.ID()))
	for missing := map[string]bool{chat: true, presence: true}; len(missing) > 0; {
		select {
		case m := <-seen:
			delete(missing, m.Subject)
		case <-ctx.Done():
			t.Fatalf("the plain hub's client never saw %v", missing)
		}
	}
}

// plainHub runs nats-server in operator mode with a leaf node listener, and returns the
// leaf URL, the client URL, a client's .creds file and the leaf link's .creds file, whose
// user holds wire's leaf grants and may connect as a leaf node only.
func plainHub(t *testing.T) (leafURL, clientURL, clientCreds, leafCreds, leafID string) {
	t.Helper()
	op, _ := nkeys.CreateOperator()
	opPub, _ := op.PublicKey()
	sys, _ := nkeys.CreateAccount()
	sysPub, _ := sys.PublicKey()
	acct, _ := nkeys.CreateAccount()
	acctPub, _ := acct.PublicKey()
	oc := jwt.NewOperatorClaims(opPub)
	oc.SystemAccount = sysPub
	resolver := &server.MemAccResolver{}
	for pub, name := range map[string]string{sysPub: "SYS", acctPub: "HUB"} {
		ac := jwt.NewAccountClaims(pub)
		ac.Name = name
		token, err := ac.Encode(op)
		if err != nil {
			t.Fatal(err)
		}
		if err := resolver.Store(pub, token); err != nil {
			t.Fatal(err)
		}
	}
	clientAddr, leafAddr := spacetest.FreeAddr(t), spacetest.FreeAddr(t)
	opts := &server.Options{NoSigs: true, NoLog: true, TrustedOperators: []*jwt.OperatorClaims{oc},
		SystemAccount: sysPub, AccountResolver: resolver}
	opts.Host, opts.Port = splitAddr(t, clientAddr)
	opts.LeafNode.Host, opts.LeafNode.Port = splitAddr(t, leafAddr)
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("the plain hub did not start")
	}
	leaf := userCreds(t, acct, func(uc *jwt.UserClaims) {
		leafID = uc.Subject
		p := wire.LeafPermissions(wire.NewNames("main"), uc.Subject)
		uc.Pub.Allow.Add(p.Pub.Allow...)
		uc.Sub.Allow.Add(p.Sub.Allow...)
		uc.AllowedConnectionTypes.Add(jwt.ConnectionTypeLeafnode)
	})
	return "nats-leaf://" + leafAddr, "nats://" + clientAddr, userCreds(t, acct, func(*jwt.UserClaims) {}), leaf, leafID
}

// splitAddr is host:port's host and port.
func splitAddr(t *testing.T, addr string) (string, int) {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return host, n
}

// userCreds writes a .creds file (0600) for a new user of account, signed by it, with edit
// applied to its claims.
func userCreds(t *testing.T, account nkeys.KeyPair, edit func(*jwt.UserClaims)) string {
	t.Helper()
	user, _ := nkeys.CreateUser()
	pub, _ := user.PublicKey()
	seed, _ := user.Seed()
	uc := jwt.NewUserClaims(pub)
	edit(uc)
	token, err := uc.Encode(account)
	if err != nil {
		t.Fatal(err)
	}
	data, err := jwt.FormatUserConfig(token, seed)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), fmt.Sprintf("%s.creds", pub[:8]))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
