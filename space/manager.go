package space

import (
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/cotal-go/cotal/provisioner"
)

// ManagerConn opens an in-process connection of space's agent account that may serve the
// `manager` control service only (provisioner.ProfileManagerControl): take requests on
// cotal.<s>.ctl.manager.* and answer inside each one's reply subtree. The caller closes it.
func (m *Mesh) ManagerConn(space string) (*nats.Conn, error) {
	if m.store == nil {
		return nil, m.noStore()
	}
	if _, err := m.runtime(space); err != nil {
		return nil, err
	}
	cred, err := m.store.InfraCredential(space, provisioner.ProfileManagerControl)
	if err != nil {
		return nil, err
	}
	nc, err := m.infraConn(provisioner.ProfileManagerControl, cred)
	if err != nil {
		return nil, fmt.Errorf("space %s: %w", space, err)
	}
	return nc, nil
}
