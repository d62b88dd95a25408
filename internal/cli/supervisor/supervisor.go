package supervisor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/internal/cli/agentfile"
	"github.com/cotal-go/cotal/internal/cli/launch"
	"github.com/cotal-go/cotal/space"
)

// The restart policy and the stop's grace.
const (
	// MaxCrashes within CrashWindow make an agent failed.
	MaxCrashes  = 5
	CrashWindow = 10 * time.Minute
	// FirstBackoff is the wait before the first restart, doubled at each crash in the window
	// up to MaxBackoff.
	FirstBackoff = time.Second
	MaxBackoff   = 30 * time.Second
	// StopGrace is how long a runtime has between SIGTERM and SIGKILL.
	StopGrace = 5 * time.Second
)

// Options configure a Supervisor.
type Options struct {
	// Dir is the mesh's data directory: StateFile and the agents' directories live there.
	Dir string
	// Mesh is the running mesh the agents join.
	Mesh *space.Mesh
	// Log receives a line for each start, crash, restart and end.
	Log *slog.Logger
	// Presence says how the mesh's roster sees an instance of a space: one of
	// admin.PresenceOnline, PresenceOffline, PresenceUnknown; nil is unknown.
	Presence func(spaceName, id string) string
	// Watch are the spawned runtimes to watch from the start, those Reap found running.
	Watch []admin.AgentWatch
}

// Supervisor runs agent runtimes until they end, Stop or Close. It is safe for concurrent
// use. Locks are taken in the order saveMu, mu, then an agent's own mu; none is held while
// waiting for a process or the mesh.
type Supervisor struct {
	opts Options
	mint launch.Minter

	mu      sync.Mutex
	agents  map[key]*agent
	watched map[key]entry // runtimes of `cotal spawn` (watch.go)
	closed  bool
	wg      sync.WaitGroup // the agents' loops and the watch loop
	quit    chan struct{}  // ends the watch loop

	saveMu sync.Mutex // serializes the writes of StateFile
}

type key struct{ space, name string }

// The admin routes run agents through a Supervisor.
var _ admin.Supervisor = (*Supervisor)(nil)

// New is a Supervisor of opts; it runs nothing until Start.
func New(opts Options) *Supervisor {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	s := &Supervisor{opts: opts, mint: launch.Mesh{M: opts.Mesh}, agents: map[key]*agent{},
		watched: map[key]entry{}, quit: make(chan struct{})}
	for _, w := range opts.Watch {
		s.watched[key{w.Space, w.Name}] = entry{Space: w.Space, Name: w.Name, PID: w.PID, StartTime: w.StartTime,
			Credential: w.Credential, Foreground: true}
	}
	if len(s.watched) > 0 {
		s.save()
	}
	s.wg.Go(func() { s.watchLoop(s.quit) })
	return s
}

// Start mints the credential of req's agent file, writes its runtime's files and runs it.
// It refuses a name the supervisor runs already, or that an active credential holds.
func (s *Supervisor) Start(ctx context.Context, req admin.AgentStart) (*admin.AgentInfo, error) {
	if err := checkStart(&req); err != nil {
		return nil, err
	}
	k := key{req.Space, req.Name}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, space.ErrClosed
	}
	if old := s.agents[k]; old != nil && !old.ended() {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %s in space %s; `cotal stop %s --space %s` stops it",
			admin.ErrAgentSupervised, req.Name, req.Space, req.Name, req.Space)
	}
	a := &agent{sup: s, key: k, workDir: req.WorkDir, command: req.Command, req: req, state: stateStarting,
		stop: make(chan struct{}), done: make(chan struct{})}
	s.agents[k] = a // reserved: a second Start of the name is refused meanwhile
	s.mu.Unlock()

	info, err := s.start(ctx, a, req)
	if err != nil {
		s.mu.Lock()
		delete(s.agents, k)
		s.mu.Unlock()
		return nil, err
	}
	return info, nil
}

// checkStart refuses a request the mesh cannot run as given.
func checkStart(req *admin.AgentStart) error {
	if req.Space == "" {
		return fmt.Errorf("%w: no space", admin.ErrBadRequest)
	}
	if err := agentfile.CheckName(req.Name); err != nil {
		return fmt.Errorf("%w: %w", admin.ErrBadRequest, err)
	}
	if req.Runtime == "" {
		req.Runtime = "auto"
	}
	if !launch.Runtimes[req.Runtime] {
		return fmt.Errorf("%w: runtime %q: use claude, plain or auto", admin.ErrBadRequest, req.Runtime)
	}
	if len(req.Command) == 0 || req.Command[0] == "" {
		return fmt.Errorf("%w: no command to run", admin.ErrBadRequest)
	}
	if !filepath.IsAbs(req.File) || !filepath.IsAbs(req.WorkDir) {
		return fmt.Errorf("%w: the agent file and the working directory must be absolute paths", admin.ErrBadRequest)
	}
	return nil
}

// start reads the agent file again (the mesh mints what it reads, not what it was told),
// prepares the runtime and runs it a first time; a runtime that cannot start is an error, its
// credential revoked.
func (s *Supervisor) start(ctx context.Context, a *agent, req admin.AgentStart) (*admin.AgentInfo, error) {
	file, err := agentfile.Load(req.File)
	if err != nil {
		return nil, err
	}
	if file.Name != req.Name {
		return nil, fmt.Errorf("%w: %s declares name %q, not %q", admin.ErrBadRequest, req.File, file.Name, req.Name)
	}
	if err := launch.CheckGrants(file, req.AllowAnyChannel); err != nil {
		return nil, err
	}
	link, err := s.opts.Mesh.Link(req.Space)
	if err != nil {
		return nil, err
	}
	a.prep, err = launch.Prepare(ctx, s.mint, launch.Spec{Dir: s.opts.Dir, Space: req.Space, Agent: file,
		File: req.File, Link: link, Runtime: req.Runtime, Command: req.Command, Supervised: true})
	if err != nil {
		return nil, err
	}
	a.logPath = filepath.Join(a.prep.State, "output.log")
	run, err := a.spawn()
	if err != nil {
		if rerr := a.prep.Revoke(); rerr != nil {
			err = fmt.Errorf("%w; revoking %s failed too: %w", err, a.prep.Cred.ID, rerr)
		}
		return nil, err
	}
	s.opts.Log.Info("started a supervised agent", "space", req.Space, "name", req.Name, "pid", run.pid,
		"id", a.prep.Cred.ID)
	s.mu.Lock()
	a.listed = true
	closed := s.closed
	if !closed {
		s.wg.Go(func() { a.loop(run) })
	}
	s.mu.Unlock()
	if closed { // Close ran meanwhile and did not see the agent: stop it here
		a.requestStop()
		a.loop(run)
		return nil, space.ErrClosed
	}
	s.save()
	info := a.info(s.opts.Presence)
	return &info, nil
}

// List is every agent the supervisor runs or saw end (exited, failed), by space and name.
func (s *Supervisor) List() []admin.AgentInfo {
	s.mu.Lock()
	agents := make([]*agent, 0, len(s.agents))
	for _, a := range s.agents {
		if a.listed {
			agents = append(agents, a)
		}
	}
	s.mu.Unlock()
	out := make([]admin.AgentInfo, 0, len(agents))
	for _, a := range agents {
		out = append(out, a.info(s.opts.Presence))
	}
	slices.SortFunc(out, func(x, y admin.AgentInfo) int {
		return cmp.Or(cmp.Compare(x.Space, y.Space), cmp.Compare(x.Name, y.Name))
	})
	return out
}

// ByID is the request that started the running agent whose credential is id in spaceName,
// and false when the supervisor runs none: the manager service knows its callers by it.
func (s *Supervisor) ByID(spaceName, id string) (admin.AgentStart, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, a := range s.agents {
		if k.space == spaceName && a.listed && a.prep.Cred.ID == id && !a.ended() {
			return a.req, true
		}
	}
	return admin.AgentStart{}, false
}

// lookup is the agent name of spaceName, or ErrNoSuchAgent saying what to do.
func (s *Supervisor) lookup(spaceName, name string) (*agent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.agents[key{spaceName, name}]
	if a == nil || !a.listed {
		return nil, fmt.Errorf("%w %s in space %s; `cotal ps` lists them", admin.ErrNoSuchAgent, name, spaceName)
	}
	return a, nil
}

// Stop stops the agent's process group (SIGTERM, SIGKILL after StopGrace), waits for it,
// revokes its credential and forgets it. An agent that ended already is only forgotten.
func (s *Supervisor) Stop(ctx context.Context, spaceName, name string) error {
	a, err := s.lookup(spaceName, name)
	if err != nil {
		return err
	}
	a.requestStop()
	select {
	case <-a.done:
	case <-ctx.Done():
		return fmt.Errorf("stop %s: %w; it is still stopping", name, ctx.Err())
	}
	s.mu.Lock()
	if s.agents[a.key] == a {
		delete(s.agents, a.key)
	}
	s.mu.Unlock()
	return nil
}

// Logs is the last n lines of the agent's output.
func (s *Supervisor) Logs(spaceName, name string, n int) (*admin.AgentLogs, error) {
	a, err := s.lookup(spaceName, name)
	if err != nil {
		return nil, err
	}
	lines, err := lastLines(a.logPath, n)
	if err != nil {
		return nil, err
	}
	return &admin.AgentLogs{Lines: lines}, nil
}

// Close stops every agent as Stop does and waits for them, until ctx ends. No Start runs after.
func (s *Supervisor) Close(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed {
		close(s.quit)
	}
	s.closed = true
	for _, a := range s.agents {
		if a.listed {
			a.requestStop()
		}
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop the supervised agents: %w", ctx.Err())
	}
}

// save rewrites StateFile with every agent whose credential is active.
func (s *Supervisor) save() {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	s.mu.Lock()
	var entries []entry
	for _, a := range s.agents {
		if !a.listed {
			continue
		}
		if e, ok := a.entry(); ok {
			entries = append(entries, e)
		}
	}
	for _, e := range s.watched {
		entries = append(entries, e)
	}
	s.mu.Unlock()
	slices.SortFunc(entries, func(x, y entry) int {
		return cmp.Or(cmp.Compare(x.Space, y.Space), cmp.Compare(x.Name, y.Name))
	})
	if err := writeState(s.opts.Dir, entries); err != nil {
		s.opts.Log.Error("write the supervisor's state: agents may be left running if the mesh is killed",
			"file", filepath.Join(s.opts.Dir, StateFile), "err", err)
	}
}

// lastLines is the last n lines of the file at path, read from its last maxTail bytes.
func lastLines(path string, n int) ([]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return []string{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := max(fi.Size()-maxTail, 0)
	buf := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil {
		return nil, err
	}
	text := string(buf)
	lines := splitLines(text)
	if off > 0 && len(lines) > 0 {
		lines = lines[1:] // the first is cut
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines, nil
}

// maxTail bounds what Logs reads of an output file.
const maxTail = 1 << 20
