// Package manager serves the `manager` control service of a space (SPEC §5 control requests
// on cotal.<s>.ctl.manager.<sender>): the agents the supervisor of `cotal up` runs may ask it
// to spawn a teammate from an agent file, despawn one, read an agent file's persona and
// grants, and list the supervised agents. docs/agents.md "The manager service" is the design:
// who may reach it (the broker decides), who may ask what (the service decides, from the
// caller's registry row), and why a teammate never holds more than its spawner.
package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/internal/cli/agentfile"
	"github.com/cotal-go/cotal/internal/loggate"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/wire"
)

// Defaults of Options.
const (
	// DefaultMaxSpawned bounds the running agents one caller has spawned.
	DefaultMaxSpawned = 8
	// DefaultWorkers is how many requests are served at once; DefaultPerSender how many of
	// one sender may be admitted and unanswered. A request past either is answered busy.
	DefaultWorkers   = 2
	DefaultPerSender = 2
)

// RequestTimeout bounds the work of one request; a spawn mints, writes files and starts a
// process, a despawn of another waits for its process to end.
const RequestTimeout = 30 * time.Second

// Refusals the service answers with (ControlReply.Error).
const (
	ReasonNotSupervised = "the manager service serves only agents the supervisor runs"
	ReasonNoCapability  = "this credential does not hold the spawn capability; give its agent file `capabilities: [spawn]`"
	ReasonBusy          = "the manager service is busy; try again"
)

// Supervisor is what the service runs agents through: *supervisor.Supervisor.
type Supervisor interface {
	Start(ctx context.Context, req admin.AgentStart) (*admin.AgentInfo, error)
	List() []admin.AgentInfo
	Stop(ctx context.Context, spaceName, name string) error
	ByID(spaceName, id string) (admin.AgentStart, bool)
}

// Options configure Serve.
type Options struct {
	// Conn takes the requests and sends the answers: space.Mesh.ManagerConn's.
	Conn *nats.Conn
	// Space is the space served.
	Space string
	// Sup runs the agents.
	Sup Supervisor
	// Credentials lists the space's registry (space.Mesh.Credentials): a caller's grants and
	// capabilities are read from its own row.
	Credentials func(spaceName string) ([]provisioner.Record, error)
	// Log receives refusals worth an operator's eye; nil discards.
	Log *slog.Logger
	// MaxSpawned bounds the running agents one caller has spawned; default DefaultMaxSpawned.
	MaxSpawned int
}

// service is a running manager service. Locks: mu and spawnMu are never held together.
type service struct {
	opts       Options
	log        *slog.Logger
	requests   wire.RequestLog // request ids seen recently, so a copy is not served twice
	refusedLog loggate.Gate    // paces the lines of requests dropped for their reply subject
	dropped    atomic.Int64    // requests dropped for their reply subject

	mu       sync.Mutex
	inFlight map[string]int // admitted, unanswered requests by sender; guarded by mu
	spawnMu  sync.Mutex     // serializes spawns, so the per-caller bound holds
	workers  chan struct{}
	wg       sync.WaitGroup
}

// Serve answers the space's manager requests until ctx ends, then waits for the requests it
// is serving. It calls ready once its subscription is confirmed by the broker, so a request
// sent after ready is served.
func Serve(ctx context.Context, opts Options, ready func()) error {
	if opts.MaxSpawned <= 0 {
		opts.MaxSpawned = DefaultMaxSpawned
	}
	s := &service{opts: opts, log: opts.Log, inFlight: map[string]int{}, workers: make(chan struct{}, DefaultWorkers)}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	subject := wire.NewNames(opts.Space).Prefix() + ".ctl." + wire.ManagerService + ".*"
	sub, err := opts.Conn.SubscribeSync(subject)
	if err != nil {
		return fmt.Errorf("subscribe %s: %w", subject, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := opts.Conn.FlushTimeout(10 * time.Second); err != nil {
		return fmt.Errorf("confirm the subscription to %s: %w", subject, err)
	}
	defer s.wg.Wait()
	if ready != nil {
		ready()
	}
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("manager service: %w", err)
		}
		s.admit(ctx, m)
	}
}

// admit serves m on a worker, or answers it busy. A reply subject outside the request
// subject's own .reply. subtree gets no answer at all (wire.CheckControlReplySubject, the
// rule every cotal control service answers by).
func (s *service) admit(ctx context.Context, m *nats.Msg) {
	if err := wire.CheckControlReplySubject(m.Subject, m.Reply); err != nil {
		// Counted, and logged at a pace: a flood would otherwise flood the log too.
		n := s.dropped.Add(1)
		if s.refusedLog.Admit(time.Now()) {
			s.log.Warn("dropping manager requests whose reply subject is outside their own subtree",
				"subject", m.Subject, "reply", m.Reply, "dropped_so_far", n)
		}
		return
	}
	sender := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
	if s.requests.Duplicate(sender, m.Header.Get(wire.RequestIDHeader), time.Now()) {
		// The broker delivered it twice (it re-registers the account's imports at every
		// mint a spawn makes); the first copy is answered.
		return
	}
	s.mu.Lock()
	if s.inFlight[sender] >= DefaultPerSender {
		s.mu.Unlock()
		s.respond(m, wire.ReplyError(ReasonBusy))
		return
	}
	select {
	case s.workers <- struct{}{}:
	default:
		s.mu.Unlock()
		s.respond(m, wire.ReplyError(ReasonBusy))
		return
	}
	s.inFlight[sender]++
	s.mu.Unlock()
	s.wg.Go(func() {
		defer func() {
			<-s.workers
			s.mu.Lock()
			if s.inFlight[sender]--; s.inFlight[sender] <= 0 {
				delete(s.inFlight, sender)
			}
			s.mu.Unlock()
		}()
		reply, after := s.handle(ctx, m)
		s.respond(m, reply)
		if after != nil {
			after()
		}
	})
}

func (s *service) respond(m *nats.Msg, reply wire.ControlReply) {
	data, err := json.Marshal(reply)
	if err == nil {
		err = m.Respond(data)
	}
	if err != nil {
		s.log.Warn("could not answer a manager request", "subject", m.Subject, "err", err)
	}
}

// caller is the sender of a checked request: its supervised start and its registry row.
type caller struct {
	id    string
	start admin.AgentStart
	rec   provisioner.Record
}

func (c caller) can(capability string) bool {
	for _, x := range c.rec.Grants.Capabilities {
		if x == capability {
			return true
		}
	}
	return false
}

// handle checks and serves one request; after, when set, runs once the answer is sent (a
// despawn of the caller itself, which ends the caller's connection).
func (s *service) handle(ctx context.Context, m *nats.Msg) (wire.ControlReply, func()) {
	sub, req, err := wire.CheckControlRequest(m.Subject, m.Data)
	if err != nil {
		reason, ok := wire.ReasonOf(err)
		if !ok {
			reason = err.Error()
		}
		return wire.ReplyError(reason), nil
	}
	c, err := s.caller(sub.Sender)
	if err != nil {
		return wire.ReplyError(err.Error()), nil
	}
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	var data any
	var after func()
	switch req.Op {
	case wire.OpManagerList:
		data = s.list()
	case wire.OpManagerPersona:
		data, err = s.persona(c, req.Args)
	case wire.OpManagerSpawn:
		data, err = s.spawn(ctx, c, req.Args)
	case wire.OpManagerDespawn:
		data, after, err = s.despawn(ctx, c, req.Args)
	default:
		return wire.ReplyError(fmt.Sprintf("op %q not supported on the manager service; use spawn, despawn, persona or list", req.Op)), nil
	}
	if err != nil {
		return wire.ReplyError(err.Error()), nil
	}
	reply, err := wire.ReplyOK(data)
	if err != nil {
		return wire.ReplyError(err.Error()), nil
	}
	return reply, after
}

// caller is the supervised agent id with its active registry row, or why not.
func (s *service) caller(id string) (caller, error) {
	start, ok := s.opts.Sup.ByID(s.opts.Space, id)
	if !ok {
		return caller{}, errors.New(ReasonNotSupervised)
	}
	recs, err := s.opts.Credentials(s.opts.Space)
	if err != nil {
		return caller{}, fmt.Errorf("read the registry: %w", err)
	}
	for _, r := range recs {
		if r.ID == id && r.Active(time.Now()) {
			return caller{id: id, start: start, rec: r}, nil
		}
	}
	return caller{}, errors.New(ReasonNotSupervised)
}

// list is the space's supervised agents.
func (s *service) list() []wire.ManagedAgent {
	out := []wire.ManagedAgent{}
	for _, a := range s.opts.Sup.List() {
		if a.Space == s.opts.Space {
			out = append(out, agentOf(a))
		}
	}
	return out
}

func agentOf(a admin.AgentInfo) wire.ManagedAgent {
	return wire.ManagedAgent{Name: a.Name, ID: a.ID, State: a.State, Presence: a.Presence, Restarts: a.Restarts, SpawnedBy: a.SpawnedBy}
}

// file resolves the agent file name as `cotal start NAME` would in the caller's working
// directory; a name that is not an agent name (a path, `..`) is refused before any lookup.
func (s *service) file(c caller, raw json.RawMessage) (*agentfile.Agent, string, error) {
	var args wire.ManagerNameArgs
	if len(raw) == 0 || json.Unmarshal(raw, &args) != nil {
		return nil, "", fmt.Errorf("%s: args must be {\"name\": NAME}", wire.ReasonMalformedJSON)
	}
	if err := agentfile.CheckName(args.Name); err != nil {
		return nil, "", err
	}
	dirs, err := agentfile.Search(c.start.WorkDir)
	if err != nil {
		return nil, "", err
	}
	path, err := dirs.Find(args.Name)
	if err != nil {
		return nil, "", fmt.Errorf("%w named %q", agentfile.ErrNotFound, args.Name)
	}
	a, err := agentfile.Load(path)
	if err != nil {
		return nil, "", fmt.Errorf("agent file %s: %w", args.Name, err)
	}
	return a, path, nil
}

// persona answers an agent file's identity, grants and persona, to a caller that may spawn.
func (s *service) persona(c caller, raw json.RawMessage) (*wire.ManagerPersona, error) {
	if !c.can(wire.CapabilitySpawn) {
		return nil, errors.New(ReasonNoCapability)
	}
	a, _, err := s.file(c, raw)
	if err != nil {
		return nil, err
	}
	return &wire.ManagerPersona{Name: a.Name, Role: a.Role, Description: a.Description, Subscribe: a.Subscribe,
		AllowSubscribe: a.AllowSubscribe, AllowPublish: a.AllowPublish, Capabilities: a.Capabilities,
		Persona: a.Persona}, nil
}

// spawn starts the agent file name under the supervisor with the caller's runtime command and
// working directory, once the file's grants are within the caller's own and the caller runs
// fewer than MaxSpawned agents it spawned.
func (s *service) spawn(ctx context.Context, c caller, raw json.RawMessage) (*wire.ManagedAgent, error) {
	if !c.can(wire.CapabilitySpawn) {
		return nil, errors.New(ReasonNoCapability)
	}
	a, path, err := s.file(c, raw)
	if err != nil {
		return nil, err
	}
	if len(a.Capabilities) > 0 {
		// No chain of spawners: an agent another agent started never spawns, so the agents
		// one operator-started agent can add number at most MaxSpawned.
		return nil, fmt.Errorf("agent file %s grants capabilities %v, which only the operator hands out "+
			"(`cotal start %s`); an agent spawns only teammates without them", a.Where("capabilities", 0), a.Capabilities, a.Name)
	}
	g := a.Grants()
	g.ManagerControl = true
	if err := g.Within(c.rec.Grants); err != nil {
		var ge *provisioner.GrantError
		if errors.As(err, &ge) {
			return nil, fmt.Errorf("agent file %s: %w", a.Where(ge.Field, ge.Index), err)
		}
		return nil, err
	}
	s.spawnMu.Lock()
	defer s.spawnMu.Unlock()
	n := 0
	for _, x := range s.opts.Sup.List() {
		if x.Space == s.opts.Space && x.SpawnedBy == c.id && x.State != admin.AgentExited && x.State != admin.AgentFailed {
			n++
		}
	}
	if n >= s.opts.MaxSpawned {
		return nil, fmt.Errorf("you run %d spawned agents, the limit is %d; despawn one first", n, s.opts.MaxSpawned)
	}
	info, err := s.opts.Sup.Start(ctx, admin.AgentStart{Space: s.opts.Space, Name: a.Name, File: path,
		Command: c.start.Command, Runtime: c.start.Runtime, WorkDir: c.start.WorkDir,
		AllowAnyChannel: c.start.AllowAnyChannel, SpawnedBy: c.id})
	if err != nil {
		return nil, err
	}
	s.log.Info("an agent spawned a teammate", "space", s.opts.Space, "by", c.id, "name", info.Name, "id", info.ID)
	ag := agentOf(*info)
	return &ag, nil
}

// despawn stops the caller itself (no name, or its own), after the answer is sent; or an
// agent the caller spawned, when it holds the spawn capability. Any other target is refused.
func (s *service) despawn(ctx context.Context, c caller, raw json.RawMessage) (any, func(), error) {
	var args wire.ManagerDespawnArgs
	if len(raw) > 0 && json.Unmarshal(raw, &args) != nil {
		return nil, nil, fmt.Errorf("%s: args must be {\"name\": NAME} or none", wire.ReasonMalformedJSON)
	}
	if args.Name == "" || args.Name == c.start.Name {
		name := c.start.Name
		return wire.ManagerDespawnReply{Name: name, State: admin.AgentStopping}, func() {
			ctx, cancel := context.WithTimeout(context.Background(), RequestTimeout)
			defer cancel()
			if err := s.opts.Sup.Stop(ctx, s.opts.Space, name); err != nil {
				s.log.Warn("despawn an agent at its own request", "space", s.opts.Space, "name", name, "err", err)
			}
		}, nil
	}
	if err := agentfile.CheckName(args.Name); err != nil {
		return nil, nil, err
	}
	if !c.can(wire.CapabilitySpawn) {
		return nil, nil, errors.New("you may despawn only yourself; despawning a teammate needs the spawn capability")
	}
	var target *admin.AgentInfo
	for _, x := range s.opts.Sup.List() {
		if x.Space == s.opts.Space && x.Name == args.Name {
			target = &x
			break
		}
	}
	if target == nil || target.SpawnedBy != c.id {
		return nil, nil, fmt.Errorf("you may despawn only yourself and the agents you spawned; %q is not one of them", args.Name)
	}
	if err := s.opts.Sup.Stop(ctx, s.opts.Space, args.Name); err != nil {
		return nil, nil, err
	}
	return wire.ManagerDespawnReply{Name: args.Name, State: admin.AgentExited}, nil, nil
}
