package space

// PlacementReport exposes placementReport to the cluster tests of package space_test.
func (m *Mesh) PlacementReport() string { return m.placementReport() }
