package space

import "github.com/cotal-go/cotal/delivery"

// Delivery exposes the durable backstop of space to the tests of package space_test, which
// interrupt its loops.
func (m *Mesh) Delivery(space string) (*delivery.Service, error) { return m.delivery(space) }

// PlacementReport exposes placementReport to the cluster tests of package space_test.
func (m *Mesh) PlacementReport() string { return m.placementReport() }

// OrphanPulls exposes the counters of cotal_orphan_pulls_total of space to package space_test.
func (m *Mesh) OrphanPulls(space string) map[string]int64 {
	rt, err := m.runtime(space)
	if err != nil {
		return nil
	}
	return rt.pulls.outcomes()
}
