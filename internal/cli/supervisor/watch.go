package supervisor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/internal/cli/launch"
	"github.com/cotal-go/cotal/internal/procstat"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
)

// A runtime `cotal spawn` runs in the user's terminal is not the supervisor's to run or stop,
// but its credential must not outlive it: spawn revokes it when the runtime exits, and asks
// the supervisor to watch the runtime's process meanwhile, so that a spawn killed with
// SIGKILL leaves the credential active only until the runtime is gone too. Watched runtimes
// are listed in StateFile (Foreground), so a mesh killed meanwhile hands them to the next.

// watchEvery is how often the watched processes are looked at.
const watchEvery = 2 * time.Second

// Watch revokes w's credential once w's process (pid and start time) is gone.
func (s *Supervisor) Watch(w admin.AgentWatch) error {
	if w.Space == "" || w.Name == "" || w.Credential == "" || w.PID <= 0 {
		return fmt.Errorf("%w: a watch needs space, name, credential and pid", admin.ErrBadRequest)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return space.ErrClosed
	}
	s.watched[key{w.Space, w.Name}] = entry{Space: w.Space, Name: w.Name, PID: w.PID, StartTime: w.StartTime,
		Credential: w.Credential, Foreground: true}
	s.mu.Unlock()
	s.save()
	return nil
}

// Unwatch ends the watch of name, whose spawn revoked its credential itself.
func (s *Supervisor) Unwatch(spaceName, name string) {
	s.mu.Lock()
	_, ok := s.watched[key{spaceName, name}]
	delete(s.watched, key{spaceName, name})
	s.mu.Unlock()
	if ok {
		s.save()
	}
}

// watchLoop revokes, every watchEvery, the credentials of the watched processes that are gone,
// until quit is closed.
func (s *Supervisor) watchLoop(quit <-chan struct{}) {
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		select {
		case <-quit:
			return
		case <-t.C:
			s.revokeGone()
		}
	}
}

// revokeGone revokes the credential of every watched process that is gone.
func (s *Supervisor) revokeGone() {
	s.mu.Lock()
	var gone []entry
	for _, e := range s.watched {
		if !alive(e) {
			gone = append(gone, e)
		}
	}
	s.mu.Unlock()
	if len(gone) == 0 {
		return
	}
	for _, e := range gone {
		ctx, cancel := context.WithTimeout(context.Background(), StopGrace)
		err := revokeLeft(ctx, s.mint, e)
		cancel()
		if err != nil {
			s.opts.Log.Warn("revoke the credential of a spawned runtime that is gone; trying again", "space", e.Space,
				"name", e.Name, "id", e.Credential, "err", err)
			continue
		}
		s.opts.Log.Info("a spawned runtime is gone; its credential is revoked", "space", e.Space, "name", e.Name,
			"pid", e.PID, "id", e.Credential)
		s.mu.Lock()
		delete(s.watched, key{e.Space, e.Name})
		s.mu.Unlock()
	}
	s.save()
}

// alive reports whether e's process still runs: the same pid with the same start time, not
// exited. Without a start time (no /proc) it is taken to be gone only once the pid is.
func alive(e entry) bool {
	st, ok := procstat.Read(e.PID)
	if !ok {
		return e.StartTime == 0 && processExists(e.PID)
	}
	return st.State != 'Z' && (e.StartTime == 0 || st.Start == e.StartTime)
}

// revokeLeft revokes e's credential; one the mesh no longer has needs no revocation.
func revokeLeft(ctx context.Context, m launch.Minter, e entry) error {
	err := m.Revoke(ctx, e.Space, e.Credential)
	if err != nil && !errors.Is(err, provisioner.ErrUnknownCredential) && !errors.Is(err, space.ErrNoSuchSpace) &&
		!errors.Is(err, provisioner.ErrUnknownSpace) {
		return err
	}
	return nil
}
