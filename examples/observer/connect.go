package main

import (
	"context"
	"errors"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

// setupTimeout bounds starting the demo mesh and connecting; a watch then runs until Ctrl-C.
const setupTimeout = 30 * time.Second

// remote observes the space of link with the observer credential in credsFile. With an
// observer credential the Endpoint is passive: it announces nothing and binds nothing.
func remote(ctx context.Context, link, credsFile string, watch bool) error {
	setup, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	ep, err := endpoint.Connect(setup, endpoint.Options{Link: link, CredsFile: credsFile,
		Kind: wire.CardKindEndpoint})
	if err != nil {
		return err
	}
	defer ep.Close(context.WithoutCancel(ctx))
	return observe(ctx, ep.Roster(), watch)
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
	watcher, err := m.Endpoint(setup, space.AgentSpec{Name: "watcher", Profile: provisioner.ProfileObserver,
		Endpoint: endpoint.Options{Kind: wire.CardKindEndpoint}})
	if err != nil {
		return err
	}
	return observe(ctx, watcher.Roster(), watch)
}

// startAgents gives the roster something to show: a working planner, an idle agent, and one
// that has already left with its final offline presence (SPEC §6).
func startAgents(ctx context.Context, m *space.Mesh) error {
	alice, err := m.Endpoint(ctx, space.AgentSpec{Name: "alice", Grants: provisioner.Grants{Role: "planner"}})
	if err != nil {
		return err
	}
	if err := alice.SetStatus(ctx, wire.StatusWorking, "planning the release"); err != nil {
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
