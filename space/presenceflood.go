package space

// presenceFlood is what the delivery service of space does with a presence row rewritten
// faster than any holder needs: the connections of its holder on this node are closed and
// the agent named in the log. A holder that reconnects and floods again is closed again
// every 10 s; its row stays what it last wrote. Nothing is done in open mode, whose
// identities are not known.
func (m *Mesh) presenceFlood(space string) func(id string) {
	account, ok := m.agentAccount[space]
	if !ok || m.opts.Open {
		return nil
	}
	return func(id string) {
		go func() {
			closed := m.broker.DisconnectUser(account, id)
			name := m.credentialName(space, id)
			m.log.Warn("closed the connections of an agent that rewrites its presence faster than any heartbeat needs",
				"space", space, "agent", name, "id", id, "closed", closed)
		}()
	}
}

// credentialName is the name id's credential was minted with in space, or id itself when the
// registry does not hold it (or the mesh has none).
func (m *Mesh) credentialName(space, id string) string {
	if m.store != nil {
		if rec, err := m.store.Record(space, id); err == nil {
			return rec.Name
		}
	}
	return id
}
