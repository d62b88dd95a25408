package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"

	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/internal/cli/launch"
	"github.com/cotal-go/cotal/internal/local"
	"github.com/cotal-go/cotal/provisioner"
)

// StateFile is the file, in the mesh's data directory, that lists the live agents.
const StateFile = "supervisor.json"

// entry is one live agent as StateFile lists it.
type entry struct {
	Space      string `json:"space"`
	Name       string `json:"name"`
	PID        int    `json:"pid,omitempty"` // 0 while it waits to restart
	PGID       int    `json:"pgid,omitempty"`
	StartTime  uint64 `json:"startTime,omitempty"` // clock ticks since boot; 0 where unknown
	Credential string `json:"credential"`
	// Foreground marks a runtime `cotal spawn` runs, which is watched, never stopped.
	Foreground bool `json:"foreground,omitempty"`
}

type stateFile struct {
	Agents []entry `json:"agents"`
}

// writeState replaces dir's StateFile with entries, mode 0600 from creation, and removes it
// when there are none.
func writeState(dir string, entries []entry) error {
	if len(entries) == 0 {
		if err := os.Remove(filepath.Join(dir, StateFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	data, err := json.MarshalIndent(stateFile{Agents: entries}, "", "  ")
	if err != nil {
		return err
	}
	return provisioner.WriteSecretFile(filepath.Join(dir, StateFile), append(data, '\n'))
}

// Reap ends what the supervisor of the last mesh on dir left when it was killed without
// stopping its agents: for each agent StateFile lists, it kills the process group still
// running (checked by start time, on Linux only), revokes the credential, and logs one line;
// then it clears the file. A runtime `cotal spawn` runs (Foreground) is never killed: while
// it runs it is returned, for the next supervisor to watch (Options.Watch); once gone its
// credential is revoked. A credential already revoked or forgotten is not an error.
func Reap(ctx context.Context, dir string, m launch.Minter, log *slog.Logger) ([]admin.AgentWatch, error) {
	path := filepath.Join(dir, StateFile)
	data, err := local.ReadPrivate(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the supervisor's state %s: %w", path, err)
	}
	var st stateFile
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("the supervisor's state %s: %w; remove it once you have stopped its agents", path, err)
	}
	var errs []error
	var watch []admin.AgentWatch
	for _, e := range st.Agents {
		if e.Foreground && alive(e) {
			watch = append(watch, admin.AgentWatch{Space: e.Space, Name: e.Name, Credential: e.Credential,
				PID: e.PID, StartTime: e.StartTime})
			continue
		}
		killed := false
		if !e.Foreground && e.PGID > 1 && leftOf(e.PID, e.PGID, e.StartTime) {
			if err := signalGroup(e.PGID, syscall.SIGKILL); err != nil {
				errs = append(errs, fmt.Errorf("kill agent %s's process group %d: %w", e.Name, e.PGID, err))
			}
			killed = true
		}
		if err := revokeLeft(ctx, m, e); err != nil {
			errs = append(errs, fmt.Errorf("revoke agent %s's credential %s in space %s: %w", e.Name, e.Credential, e.Space, err))
			continue
		}
		log.Info("reaped an agent the last supervisor left", "space", e.Space, "name", e.Name,
			"pid", e.PID, "killed", killed, "id", e.Credential)
	}
	if len(errs) > 0 {
		return watch, errors.Join(errs...) // the file stays, for the next start to try again
	}
	return watch, writeState(dir, nil)
}
