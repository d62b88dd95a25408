package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Errors of the supervised agents.
var (
	// ErrAgentActive means an active credential already carries the agent's name.
	ErrAgentActive = errors.New("the agent is already active")
	// ErrAgentSupervised means the mesh already runs an agent of the name in the space.
	ErrAgentSupervised = errors.New("the agent is already supervised")
	// ErrNoSuchAgent means the mesh supervises no agent of the name in the space.
	ErrNoSuchAgent = errors.New("no supervised agent")
	// ErrNoSupervisor means the mesh runs no supervisor (one embedded without `cotal up`).
	ErrNoSupervisor = errors.New("this mesh supervises no agents")
	// ErrWideGrant means an agent file grants channels of every team, which is minted only
	// when told.
	ErrWideGrant = errors.New("the agent file grants every channel")
)

// AgentStart asks the mesh to run an agent of an agent file under its supervisor.
type AgentStart struct {
	Space string `json:"space"`
	Name  string `json:"name"`
	// File is the agent file's absolute path, which the mesh reads again.
	File string `json:"file"`
	// Command is the runtime's command line; Runtime its preset (claude, plain, auto).
	Command []string `json:"command"`
	Runtime string   `json:"runtime"`
	// WorkDir is the directory the runtime runs in.
	WorkDir string `json:"workDir"`
	// AllowAnyChannel mints grants whose first segment is a wildcard.
	AllowAnyChannel bool `json:"allowAnyChannel,omitempty"`
	// SpawnedBy is the credential id of the supervised agent that asked the manager service
	// for this one; set in process only, never over the socket.
	SpawnedBy string `json:"-"`
}

// The states of a supervised agent.
const (
	AgentRunning    = "running"    // its runtime runs
	AgentRestarting = "restarting" // it crashed and waits its backoff to run again
	AgentStopping   = "stopping"   // it was told to stop and has not exited yet
	AgentExited     = "exited"     // it exited 0: despawned, its credential revoked
	AgentFailed     = "failed"     // it crashed too often: its credential revoked
)

// The presence of a supervised agent, as the mesh's roster sees its identity.
const (
	PresenceOnline  = "online"
	PresenceOffline = "offline"
	PresenceUnknown = "unknown" // never seen, or no roster to ask
)

// AgentInfo is one supervised agent.
type AgentInfo struct {
	Space   string   `json:"space"`
	Name    string   `json:"name"`
	ID      string   `json:"id"` // its credential, which is its instance id
	PID     int      `json:"pid,omitempty"`
	State   string   `json:"state"`
	Command []string `json:"command"`
	// Started is when its current run started (zero when none runs).
	Started  time.Time `json:"started,omitzero"`
	Restarts int       `json:"restarts"`
	Presence string    `json:"presence"`
	// LastLine is the last line of its output, as written: print it through termsafe.
	LastLine string `json:"lastLine,omitempty"`
	// Log is the file its output is appended to.
	Log string `json:"log"`
	// ExitStatus says how its last run ended, when one did.
	ExitStatus string `json:"exitStatus,omitempty"`
	// SpawnedBy is the id of the agent that spawned it through the manager service; empty
	// for one the operator started.
	SpawnedBy string `json:"spawnedBy,omitempty"`
}

// AgentWatch asks the mesh to revoke a credential once the process running it is gone: a
// runtime `cotal spawn` runs in the foreground, whose credential would otherwise stay active
// after a SIGKILL of spawn.
type AgentWatch struct {
	Space      string `json:"space"`
	Name       string `json:"name"`
	Credential string `json:"credential"`
	PID        int    `json:"pid"`
	// StartTime is the process's start time (procstat), which tells it from a later process
	// that took its number.
	StartTime uint64 `json:"startTime"`
}

// AgentLogs is the end of a supervised agent's output, as written.
type AgentLogs struct {
	Lines []string `json:"lines"`
}

// Supervisor runs agents for the admin routes; internal/cli/supervisor is the one `cotal up`
// serves.
type Supervisor interface {
	Start(ctx context.Context, req AgentStart) (*AgentInfo, error)
	List() []AgentInfo
	Stop(ctx context.Context, spaceName, name string) error
	Logs(spaceName, name string, n int) (*AgentLogs, error)
	Watch(w AgentWatch) error
	Unwatch(spaceName, name string)
}

// StartAgent runs an agent under the mesh's supervisor.
func (c *Client) StartAgent(ctx context.Context, req AgentStart) (*AgentInfo, error) {
	var info AgentInfo
	if err := c.do(ctx, http.MethodPost, "/v1/agents", req, &info, http.StatusCreated); err != nil {
		return nil, err
	}
	return &info, nil
}

// Agents lists the supervised agents.
func (c *Client) Agents(ctx context.Context) ([]AgentInfo, error) {
	var list []AgentInfo
	return list, c.do(ctx, http.MethodGet, "/v1/agents", nil, &list, http.StatusOK)
}

// StopAgent stops a supervised agent and revokes its credential.
func (c *Client) StopAgent(ctx context.Context, spaceName, name string) error {
	return c.do(ctx, http.MethodDelete, spacePath(spaceName, "agents", name), nil, nil, http.StatusNoContent)
}

// WatchAgent has the mesh revoke w's credential once w's process is gone.
func (c *Client) WatchAgent(ctx context.Context, w AgentWatch) error {
	return c.do(ctx, http.MethodPut, spacePath(w.Space, "agents", w.Name, "watch"), w, nil, http.StatusNoContent)
}

// UnwatchAgent ends the watch of name's process, whose credential its spawn revoked itself.
func (c *Client) UnwatchAgent(ctx context.Context, spaceName, name string) error {
	return c.do(ctx, http.MethodDelete, spacePath(spaceName, "agents", name, "watch"), nil, nil, http.StatusNoContent)
}

// AgentLogs is the last n lines of a supervised agent's output.
func (c *Client) AgentLogs(ctx context.Context, spaceName, name string, n int) (*AgentLogs, error) {
	var l AgentLogs
	err := c.do(ctx, http.MethodGet, spacePath(spaceName, "agents", name, "logs")+"?n="+strconv.Itoa(n), nil, &l, http.StatusOK)
	if err != nil {
		return nil, err
	}
	return &l, nil
}

func (h *handlers) startAgent(ctx context.Context, r *http.Request) (int, any, error) {
	if h.sup == nil {
		return 0, nil, ErrNoSupervisor
	}
	var req AgentStart
	if err := decode(r, &req); err != nil {
		return 0, nil, err
	}
	info, err := h.sup.Start(ctx, req)
	return http.StatusCreated, info, err
}

func (h *handlers) agents(context.Context, *http.Request) (int, any, error) {
	if h.sup == nil {
		return http.StatusOK, []AgentInfo{}, nil
	}
	list := h.sup.List()
	if list == nil {
		list = []AgentInfo{}
	}
	return http.StatusOK, list, nil
}

func (h *handlers) stopAgent(ctx context.Context, r *http.Request) (int, any, error) {
	if h.sup == nil {
		return 0, nil, ErrNoSupervisor
	}
	return http.StatusNoContent, nil, h.sup.Stop(ctx, r.PathValue("space"), r.PathValue("name"))
}

func (h *handlers) watchAgent(_ context.Context, r *http.Request) (int, any, error) {
	if h.sup == nil {
		return 0, nil, ErrNoSupervisor
	}
	var w AgentWatch
	if err := decode(r, &w); err != nil {
		return 0, nil, err
	}
	if err := samePath("space", r.PathValue("space"), &w.Space); err != nil {
		return 0, nil, err
	}
	if err := samePath("name", r.PathValue("name"), &w.Name); err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, h.sup.Watch(w)
}

func (h *handlers) unwatchAgent(_ context.Context, r *http.Request) (int, any, error) {
	if h.sup == nil {
		return 0, nil, ErrNoSupervisor
	}
	h.sup.Unwatch(r.PathValue("space"), r.PathValue("name"))
	return http.StatusNoContent, nil, nil
}

func (h *handlers) agentLogs(_ context.Context, r *http.Request) (int, any, error) {
	if h.sup == nil {
		return 0, nil, ErrNoSupervisor
	}
	n := 20
	if s := r.URL.Query().Get("n"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 {
			return 0, nil, fmt.Errorf("%w: n=%q: pass a count of lines", ErrBadRequest, s)
		}
		n = v
	}
	l, err := h.sup.Logs(r.PathValue("space"), r.PathValue("name"), n)
	return http.StatusOK, l, err
}
