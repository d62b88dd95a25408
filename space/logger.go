package space

import "log/slog"

// Logger is the logger the mesh writes its own and nats-server's logs to (Options.Logger, or
// one that discards), so a program hosting the mesh logs what it does to it in the same stream:
// the admin socket's mints, revocations and channel removals.
func (m *Mesh) Logger() *slog.Logger { return m.log }
