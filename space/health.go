package space

import (
	"errors"
	"fmt"
	"sort"

	"github.com/nats-io/nats.go"
)

// ComponentHealth is the state of one part of the mesh: Err is nil when it works.
type ComponentHealth struct {
	Name string
	Err  error
}

// Health reports every component of the mesh: the broker with JetStream, on a cluster node
// the cluster (a metadata leader, a leader for every stream it holds), and per space the
// provisioner connection and the delivery loops (in a cluster, those of the spaces whose
// backstop this node runs; none while another node holds the lease). A mesh is healthy only
// when all are.
func (m *Mesh) Health() []ComponentHealth {
	out := []ComponentHealth{{Name: "broker", Err: m.broker.Healthy()}}
	m.mu.Lock()
	rts := make([]*spaceRuntime, 0, len(m.spaces))
	for _, rt := range m.spaces {
		rts = append(rts, rt)
	}
	// A node without the key store has no space runtime, only the backstops it may run.
	var held []*backstop
	for name, b := range m.backstops {
		if _, ok := m.spaces[name]; !ok {
			held = append(held, b)
		}
	}
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return []ComponentHealth{{Name: "mesh", Err: ErrClosed}}
	}
	if m.opts.clustered() {
		out = append(out, ComponentHealth{Name: "cluster", Err: m.clusterHealth()})
	}
	sort.Slice(rts, func(i, j int) bool { return rts[i].name < rts[j].name })
	for _, rt := range rts {
		out = append(out,
			ComponentHealth{Name: "space " + rt.name + " provisioner", Err: connHealth(rt.prov)},
			ComponentHealth{Name: "space " + rt.name + " delivery", Err: rt.deliveryHealth()})
	}
	sort.Slice(held, func(i, j int) bool { return held[i].space < held[j].space })
	for _, b := range held {
		var err error
		if svc := b.service(); svc != nil {
			err = svc.Healthy()
		}
		out = append(out, ComponentHealth{Name: "space " + b.space + " delivery", Err: err})
	}
	return out
}

// Healthy returns nil when every component works, else an error naming each one that does
// not.
func (m *Mesh) Healthy() error {
	var errs []error
	for _, c := range m.Health() {
		if c.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.Name, c.Err))
		}
	}
	return errors.Join(errs...)
}

func connHealth(nc *nats.Conn) error {
	if s := nc.Status(); s != nats.CONNECTED {
		return fmt.Errorf("connection is %s", s)
	}
	return nil
}
