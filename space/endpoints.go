package space

import (
	"context"
	"fmt"

	"github.com/nats-io/nkeys"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/provisioner"
)

// AgentSpec describes an in-process agent: the credential the mesh mints for it and the
// Endpoint options it connects with.
type AgentSpec struct {
	// Space is the agent's space; default the mesh's first space.
	Space string
	// Name is the display name written into the credential and the AgentCard.
	Name string
	// Profile is the credential profile; default agent.
	Profile provisioner.Profile
	// Grants are the agent's channel scope and role (SPEC §9).
	Grants provisioner.Grants
	// Endpoint holds every other Endpoint option (Handler, Channels, Kind, ...). Its
	// InProcess, Space, Creds, CredsFile and Link are set by the mesh.
	Endpoint endpoint.Options
}

// Endpoint mints a credential for spec (with its bind-only consumers pre-created) and
// returns an Endpoint connected in process, with no TCP. The credential never expires, so an
// embedding program keeps its agents as long as it runs, and is valid for in-process
// connections only, so it is worthless outside this process. The mesh's Endpoints of one space
// share one presence watch and directory (endpoint.Roster), so a thousand agents in one process
// decode each presence row once. The mesh closes the Endpoint,
// with a final offline presence, when the mesh closes; the caller may close it earlier.
func (m *Mesh) Endpoint(ctx context.Context, spec AgentSpec) (*endpoint.Endpoint, error) {
	if spec.Space == "" {
		spec.Space = m.opts.Spaces[0]
	}
	if spec.Profile == "" {
		spec.Profile = provisioner.ProfileAgent
	}
	opts := spec.Endpoint
	opts.InProcess, opts.Space, opts.Link, opts.CredsFile = m.InProcess(), spec.Space, "", ""
	if opts.Name == "" {
		opts.Name = spec.Name
	}
	if m.store != nil {
		cred, err := m.Mint(ctx, provisioner.MintRequest{Space: spec.Space, Name: spec.Name,
			Profile: spec.Profile, Grants: spec.Grants, NoExpiry: true, InProcessOnly: true})
		if err != nil {
			return nil, err
		}
		if opts.Creds, err = cred.Creds(); err != nil {
			return nil, err
		}
	} else if err := m.provisionOpen(ctx, spec.Space, &opts); err != nil {
		return nil, err
	}
	ep, err := endpoint.Connect(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", spec.Name, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		_ = ep.Close(ctx)
		return nil, ErrClosed
	}
	m.endpoints = append(m.endpoints, ep)
	return ep, nil
}

// provisionOpen gives an open-mode Endpoint what minting gives an authenticated one: an id
// (a fresh user nkey unless opts.ID is set) and its bind-only consumers, which agents never
// create (SPEC §8), so its DMs, anycasts and durable copies reach it.
func (m *Mesh) provisionOpen(ctx context.Context, space string, opts *endpoint.Options) error {
	rt, err := m.runtime(space)
	if err != nil {
		return err
	}
	if opts.ID == "" {
		kp, err := nkeys.CreateUser()
		if err != nil {
			return fmt.Errorf("generate an open-mode id: %w", err)
		}
		if opts.ID, err = kp.PublicKey(); err != nil {
			return fmt.Errorf("generate an open-mode id: %w", err)
		}
	}
	return provisionInstance(ctx, rt.js, rt.names, opts.ID, opts.Role, m.opts.AckWait)
}
