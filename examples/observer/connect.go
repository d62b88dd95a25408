package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
)

// setupTimeout bounds starting the demo mesh and connecting; a watch then runs until Ctrl-C.
const setupTimeout = 30 * time.Second

// remote observes the space of link with the observer credential in credsFile.
func remote(ctx context.Context, link, credsFile string, watch bool) error {
	l, err := endpoint.ParseLink(link)
	if err != nil {
		return err
	}
	creds, err := os.ReadFile(credsFile)
	if err != nil {
		return fmt.Errorf("read the observer credential: %w", err)
	}
	opts := []nats.Option{}
	if l.TLS {
		opts = append(opts, nats.Secure())
	}
	nc, err := connect(l.ServerURL(), creds, opts...)
	if err != nil {
		return err
	}
	defer nc.Close()
	return observe(ctx, nc, l.Space, watch)
}

// demo starts a mesh in process with three agents, then observes it as an observer would.
func demo(ctx context.Context, watch bool) (err error) {
	setup, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	m, err := space.Start(setup, space.Options{Memory: true})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, m.Close(context.WithoutCancel(ctx))) }()
	if err := startAgents(setup, m); err != nil {
		return err
	}

	cred, err := m.Mint(setup, provisioner.MintRequest{Space: "main", Name: "watcher",
		Profile: provisioner.ProfileObserver}, false)
	if err != nil {
		return err
	}
	creds, err := cred.Creds()
	if err != nil {
		return err
	}
	nc, err := connect("", creds, nats.InProcessServer(m.InProcess()))
	if err != nil {
		return err
	}
	defer nc.Close()
	return observe(ctx, nc, "main", watch)
}

// startAgents gives the roster something to show: a working planner, an idle agent, and one
// that has already left with its final offline presence (SPEC §6).
func startAgents(ctx context.Context, m *space.Mesh) error {
	alice, err := m.Endpoint(ctx, space.AgentSpec{Name: "alice", Grants: provisioner.Grants{Role: "planner"}})
	if err != nil {
		return err
	}
	if err := alice.SetStatus(ctx, endpoint.StatusWorking, "planning the release"); err != nil {
		return err
	}
	if _, err := m.Endpoint(ctx, space.AgentSpec{Name: "bob"}); err != nil {
		return err
	}
	carol, err := m.Endpoint(ctx, space.AgentSpec{Name: "carol"})
	if err != nil {
		return err
	}
	return carol.Close(ctx)
}

// connect opens a NATS connection with the .creds text. The inbox prefix must be the
// credential's own (SPEC §9 item 1): replies and watch deliveries are granted on it only.
func connect(url string, creds []byte, opts ...nats.Option) (*nats.Conn, error) {
	token, err := nkeys.ParseDecoratedJWT(creds)
	if err != nil {
		return nil, fmt.Errorf("the observer credential has no user JWT: %w", err)
	}
	kp, err := nkeys.ParseDecoratedUserNKey(creds)
	if err != nil {
		return nil, errors.New("the observer credential has no user seed")
	}
	id, err := kp.PublicKey()
	if err != nil {
		return nil, err
	}
	opts = append(opts,
		nats.UserJWT(func() (string, error) { return token, nil }, kp.Sign),
		nats.CustomInboxPrefix(endpoint.InboxPrefix(id)),
		nats.Name("cotal-example:observer"))
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect as an observer: %w", err)
	}
	return nc, nil
}
