package cli

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

// presenceLogName is the name of the passive admin credential `cotal up` reads each space's
// roster with; the cli- prefix keeps it out of auth list, like the commands' own.
const presenceLogName = ownPrefix + "up-presence"

// openPresenceID is the instance id of the roster reader of an open mesh. An open mesh has no
// registry to forget a reader by, and it gives every in-process Endpoint bind-only consumers,
// so a fixed id keeps each start from leaving another reader's consumers behind.
const openPresenceID = "UCO6JCOZYDUQ5ALZLKRL4QU2ATZUTT6C7CIMFXB3RJWQB3UAPDOD4G23"

// presenceLog logs, at info, each agent of every space that comes online or goes offline
// (SPEC §6), until stop.
type presenceLog struct {
	wg      sync.WaitGroup
	cancels []func()
	rosters map[string]*endpoint.Roster // by space; written before startPresenceLog returns
}

// startPresenceLog reads every space's roster through a passive, in-process admin Endpoint:
// it has no presence of its own and binds no consumer.
func startPresenceLog(ctx context.Context, m *space.Mesh, log *slog.Logger, open bool) (*presenceLog, error) {
	p := &presenceLog{rosters: map[string]*endpoint.Roster{}}
	opts := endpoint.Options{Passive: true, Kind: wire.CardKindEndpoint}
	if open {
		opts.ID = openPresenceID
	}
	for _, s := range m.Spaces() {
		e, err := m.Endpoint(ctx, space.AgentSpec{Space: s, Name: presenceLogName, Profile: provisioner.ProfileAdmin,
			Endpoint: opts})
		if err != nil {
			p.stop()
			return nil, fmt.Errorf("read the roster of space %s: %w", s, err)
		}
		p.rosters[s] = e.Roster()
		events, cancel := e.Roster().Subscribe()
		p.cancels = append(p.cancels, cancel)
		p.wg.Go(func() { logRoster(s, events, log) })
	}
	return p, nil
}

// logRoster logs each online and offline event until events is closed.
func logRoster(spaceName string, events <-chan endpoint.RosterEvent, log *slog.Logger) {
	for ev := range events {
		if ev.Kind != endpoint.PeerOnline && ev.Kind != endpoint.PeerOffline {
			continue
		}
		card := ev.Peer.Presence.Card
		attrs := []any{"space", spaceName, "name", card.Name, "id", card.ID, "kind", card.Kind}
		if card.Role != "" {
			attrs = append(attrs, "role", card.Role)
		}
		log.Info("agent "+string(ev.Kind), attrs...)
	}
}

// stop ends the logging. The readers' credentials are in-process only: the mesh closes their
// Endpoints when it closes, and the registry forgets them at the next start
// (provisioner.Store.Forget), so nothing is revoked (a revocation of a non-expiring credential
// would stay in the account JWT for good). A nil p (not started) has nothing to stop.
func (p *presenceLog) stop() {
	if p == nil {
		return
	}
	for _, cancel := range p.cancels {
		cancel()
	}
	p.wg.Wait()
}

// presence is how the roster of spaceName sees the instance id: online, offline, or unknown
// when it never saw it or has no roster of the space (a nil p included).
func (p *presenceLog) presence(spaceName, id string) string {
	if p == nil {
		return admin.PresenceUnknown
	}
	r := p.rosters[spaceName]
	if r == nil {
		return admin.PresenceUnknown
	}
	peer, ok := r.Peer(id)
	switch {
	case !ok:
		return admin.PresenceUnknown
	case peer.Online:
		return admin.PresenceOnline
	}
	return admin.PresenceOffline
}
