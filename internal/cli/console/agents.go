package console

import (
	"context"
	"net/http"
	"time"

	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/internal/termsafe"
)

// Agents is what the console reads of the runtimes `cotal up` supervises: the rows `cotal ps`
// shows. internal/cli/supervisor's Supervisor is one; the console takes it through this
// interface, beside the admin package's types, and imports no supervisor.
type Agents interface {
	List() []admin.AgentInfo
}

// ShowAgents makes the agents view list a's runtimes; until it is called (and for a mesh run
// without a supervisor) the view says that none is supervised. Safe to call at any time.
func (c *Console) ShowAgents(a Agents) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.agents = a
}

// supervised is the Agents ShowAgents was given, nil without one.
func (c *Console) supervised() Agents {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.agents
}

// agentRow is one supervised runtime. Every string is shown through html/template, which
// escapes it. The last output line is whatever the runtime printed, terminal controls and
// bidi overrides included: termsafe makes those visible too, so that no line can hide or
// reorder text on the operator's page.
type agentRow struct {
	Name, Space, ID, State, Presence, Uptime, LastLine, ExitStatus string
	PID, Restarts                                                  int
}

// agentsData is every supervised runtime, by space and name, as the supervisor lists them.
type agentsData struct {
	Supervised bool
	Rows       []agentRow
}

func agentsView(_ context.Context, ss *spaceState, _ *http.Request) (any, error) {
	a := ss.agents()
	if a == nil {
		return agentsData{}, nil
	}
	now := time.Now()
	out := agentsData{Supervised: true}
	for _, i := range a.List() {
		row := agentRow{Name: i.Name, Space: i.Space, ID: i.ID, State: i.State, Presence: i.Presence, LastLine: termsafe.String(i.LastLine),
			ExitStatus: i.ExitStatus, PID: i.PID, Restarts: i.Restarts, Uptime: "–"}
		if !i.Started.IsZero() && i.PID != 0 {
			row.Uptime = now.Sub(i.Started).Round(time.Second).String()
		}
		out.Rows = append(out.Rows, row)
	}
	return out, nil
}
