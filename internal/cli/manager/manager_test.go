package manager_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/internal/cli/launch"
	"github.com/cotal-go/cotal/internal/cli/manager"
	"github.com/cotal-go/cotal/internal/cli/supervisor"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// The team's agent files: lead may spawn within team.>, worker and peer are plain, wide asks
// for more than lead holds, and boss holds the capability without lead's other grants.
var files = map[string]string{
	"lead": `---
name: lead
subscribe: [team.general]
allowSubscribe: [team.>]
allowPublish: [team.>]
capabilities: [spawn]
---
You lead the team.
`,
	"worker": `---
name: worker
subscribe: [team.general]
allowPublish: [team.general]
---
You build.
`,
	"peer": `---
name: peer
subscribe: [team.general]
allowPublish: [team.general]
---
You review.
`,
	"wide": `---
name: wide
subscribe: [team.general]
allowPublish: [team.general, ops]
---
You want more.
`,
	"spawner": `---
name: spawner
subscribe: [team.general]
allowPublish: [team.general]
capabilities: [spawn]
---
You spawn too.
`,
}

// harness is a mesh with a supervisor, the manager service of space main, and a project
// directory holding the agent files.
type harness struct {
	t   *testing.T
	m   *space.Mesh
	sup *supervisor.Supervisor
	dir string // the project
}

func newHarness(t *testing.T, maxSpawned int) *harness {
	t.Helper()
	m := spacetest.New(t, func(o *space.Options) { o.Listen = "127.0.0.1:0" })
	project := t.TempDir()
	if err := os.Mkdir(filepath.Join(project, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	agents := filepath.Join(project, ".cotal", "agents")
	if err := os.MkdirAll(agents, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(agents, name+".md"), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sup := supervisor.New(supervisor.Options{Dir: m.Dir(), Mesh: m})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := sup.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	nc, err := m.ManagerConn("main")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() {
		done <- manager.Serve(ctx, manager.Options{Conn: nc, Space: "main", Sup: sup, Credentials: m.Credentials,
			MaxSpawned: maxSpawned}, func() { close(ready) })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		nc.Close()
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	return &harness{t: t, m: m, sup: sup, dir: project}
}

// start runs name's file under the supervisor as an operator would; its runtime only sleeps,
// and the test speaks for it with its credential.
func (h *harness) start(name string) {
	h.t.Helper()
	_, err := h.sup.Start(context.Background(), admin.AgentStart{Space: "main", Name: name,
		File: filepath.Join(h.dir, ".cotal", "agents", name+".md"), Command: []string{"sleep", "300"},
		Runtime: "plain", WorkDir: h.dir})
	if err != nil {
		h.t.Fatalf("start %s: %v", name, err)
	}
}

// creds is the credential the supervisor wrote for name's runtime.
func (h *harness) creds(name string) []byte {
	h.t.Helper()
	data, err := os.ReadFile(filepath.Join(launch.StateDir(h.m.Dir(), "main", name), name+".creds"))
	if err != nil {
		h.t.Fatal(err)
	}
	return data
}

// as connects as the holder of creds.
func (h *harness) as(creds []byte) *endpoint.Endpoint {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := endpoint.Connect(ctx, endpoint.Options{InProcess: h.m.InProcess(), Space: "main", Creds: creds})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = e.Close(context.Background()) })
	return e
}

func request(e *endpoint.Endpoint, op string, args any) (*wire.ControlReply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	return e.Request(ctx, wire.ManagerService, op, args)
}

// agent is name's row of the supervisor's list.
func (h *harness) agent(name string) (admin.AgentInfo, bool) {
	for _, a := range h.sup.List() {
		if a.Name == name {
			return a, true
		}
	}
	return admin.AgentInfo{}, false
}

// record is id's registry row.
func (h *harness) record(id string) space.CredentialInfo {
	h.t.Helper()
	recs, err := h.m.Credentials("main")
	if err != nil {
		h.t.Fatal(err)
	}
	for _, r := range recs {
		if r.ID == id {
			return r
		}
	}
	h.t.Fatalf("no registry row for %s", id)
	return space.CredentialInfo{}
}

func TestSpawnRunsATeammateWithExactlyItsFilesGrants(t *testing.T) {
	h := newHarness(t, 0)
	h.start("lead")
	lead := h.as(h.creds("lead"))

	var p wire.ManagerPersona
	r, err := request(lead, wire.OpManagerPersona, wire.ManagerNameArgs{Name: "worker"})
	if err != nil {
		t.Fatalf("persona: %v", err)
	}
	if err := json.Unmarshal(r.Data, &p); err != nil || p.Persona != "You build." || p.AllowPublish[0] != "team.general" {
		t.Fatalf("persona = %+v (%v)", p, err)
	}

	r, err = request(lead, wire.OpManagerSpawn, wire.ManagerNameArgs{Name: "worker"})
	if err != nil {
		t.Fatalf("spawn: %v", err)
	}
	var got wire.ManagedAgent
	if err := json.Unmarshal(r.Data, &got); err != nil || got.Name != "worker" || got.SpawnedBy != lead.ID() {
		t.Fatalf("spawn answered %+v (%v)", got, err)
	}
	info, ok := h.agent("worker")
	if !ok || info.SpawnedBy != lead.ID() || info.State != admin.AgentRunning {
		t.Fatalf("the supervisor lists worker as %+v, %v", info, ok)
	}
	if rec := h.record(info.ID); !rec.Active(time.Now()) || len(rec.Grants.Capabilities) != 0 || !rec.Grants.ManagerControl {
		t.Fatalf("worker's registry row: %+v", rec)
	}

	r, err = request(lead, wire.OpManagerList, nil)
	if err != nil || !strings.Contains(string(r.Data), `"worker"`) {
		t.Fatalf("list = %v, %v", r, err)
	}

	// On the mesh with its file's grants, checked by the broker.
	worker := h.as(h.creds("worker"))
	if worker.ID() != info.ID {
		t.Fatalf("worker connected as %s, the supervisor lists %s", worker.ID(), info.ID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := worker.Send(ctx, "team.general", []wire.Part{wire.TextPart("ready")}); err != nil {
		t.Fatalf("post inside the file's grants: %v", err)
	}
	if _, err := worker.Send(ctx, "team.other", []wire.Part{wire.TextPart("not mine")}); !errors.Is(err, endpoint.ErrPublishRefused) {
		t.Fatalf("post outside the file's grants: %v, want ErrPublishRefused", err)
	}
	if _, err := request(worker, wire.OpManagerSpawn, wire.ManagerNameArgs{Name: "peer"}); err == nil ||
		!strings.Contains(err.Error(), manager.ReasonNoCapability) {
		t.Fatalf("spawn by the capability-less teammate: %v, want %q", err, manager.ReasonNoCapability)
	}
}

func TestManagerRefusals(t *testing.T) {
	h := newHarness(t, 1)
	h.start("lead")
	h.start("peer")
	h.start("spawner")
	lead, peer, spawner := h.as(h.creds("lead")), h.as(h.creds("peer")), h.as(h.creds("spawner"))
	if _, err := request(lead, wire.OpManagerSpawn, wire.ManagerNameArgs{Name: "worker"}); err != nil {
		t.Fatalf("spawn: %v", err)
	}
	tests := []struct {
		name string
		as   *endpoint.Endpoint
		op   string
		args any
		want string
	}{
		{"spawn without the capability", peer, wire.OpManagerSpawn, wire.ManagerNameArgs{Name: "worker"}, manager.ReasonNoCapability},
		{"persona without the capability", peer, wire.OpManagerPersona, wire.ManagerNameArgs{Name: "worker"}, manager.ReasonNoCapability},
		{"despawn of another without the capability", peer, wire.OpManagerDespawn, wire.ManagerDespawnArgs{Name: "lead"}, "only yourself"},
		{"despawn of an agent the caller did not spawn", spawner, wire.OpManagerDespawn, wire.ManagerDespawnArgs{Name: "worker"}, "only yourself and the agents you spawned"},
		{"despawn of the operator's agent", lead, wire.OpManagerDespawn, wire.ManagerDespawnArgs{Name: "peer"}, "only yourself and the agents you spawned"},
		{"a file asking wider grants", lead, wire.OpManagerSpawn, wire.ManagerNameArgs{Name: "wide"}, "wider than the spawner's own"},
		{"grants wider than another spawner's", spawner, wire.OpManagerSpawn, wire.ManagerNameArgs{Name: "wide"}, "wider than the spawner's own"},
		{"a file granting the spawn capability", lead, wire.OpManagerSpawn, wire.ManagerNameArgs{Name: "spawner"}, "only the operator hands out"},
		{"a path for a name", lead, wire.OpManagerSpawn, wire.ManagerNameArgs{Name: "../x"}, "use only letters"},
		{"an absolute path for a persona", lead, wire.OpManagerPersona, wire.ManagerNameArgs{Name: "/etc/passwd"}, "use only letters"},
		{"a name with no file", lead, wire.OpManagerPersona, wire.ManagerNameArgs{Name: "nobody"}, "no agent file"},
		{"a spawn of a name with no file", lead, wire.OpManagerSpawn, wire.ManagerNameArgs{Name: "peer2"}, "no agent file"},
		{"a spawn past the bound", lead, wire.OpManagerSpawn, wire.ManagerNameArgs{Name: "peer"}, "the limit is 1"},
		{"an unknown op", lead, "rootshell", nil, "not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := request(tt.as, tt.op, tt.args)
			if !errors.Is(err, wire.ErrControlRefused) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("%s: %v, want a refusal containing %q", tt.op, err, tt.want)
			}
		})
	}
	if _, ok := h.agent("lead"); !ok {
		t.Fatal("a refused despawn stopped lead")
	}
}

func TestAnAgentDespawnsItselfAndItsTeammate(t *testing.T) {
	h := newHarness(t, 0)
	h.start("lead")
	lead := h.as(h.creds("lead"))
	if _, err := request(lead, wire.OpManagerSpawn, wire.ManagerNameArgs{Name: "worker"}); err != nil {
		t.Fatalf("spawn: %v", err)
	}
	worker, _ := h.agent("worker")
	if _, err := request(lead, wire.OpManagerDespawn, wire.ManagerDespawnArgs{Name: "worker"}); err != nil {
		t.Fatalf("despawn of the teammate lead spawned: %v", err)
	}
	if _, ok := h.agent("worker"); ok {
		t.Fatal("worker is still supervised after its despawn")
	}
	if rec := h.record(worker.ID); !rec.Revoked {
		t.Fatalf("worker's credential is not revoked: %+v", rec)
	}

	info, _ := h.agent("lead")
	if _, err := request(lead, wire.OpManagerDespawn, nil); err != nil {
		t.Fatalf("despawn of itself: %v", err)
	}
	await.True(t, 30*time.Second, "lead despawned and revoked", func() bool {
		_, ok := h.agent("lead")
		return !ok && h.record(info.ID).Revoked
	})
}

func TestACredentialMintedPlainlyCannotReachTheManager(t *testing.T) {
	h := newHarness(t, 0)
	// Minted as `cotal auth mint` does, with the same grants lead's file declares.
	cred, err := admin.Mint(context.Background(), h.m, admin.MintSpec{Space: "main", Name: "outsider",
		Profile: wire.ProfileAgent, Subscribe: []string{"team.general"}, AllowSubscribe: []string{"team.>"},
		AllowPublish: []string{"team.>"}})
	if err != nil {
		t.Fatal(err)
	}
	outsider := h.as(cred.Creds)
	_, err = request(outsider, wire.OpManagerList, nil)
	if !errors.Is(err, endpoint.ErrPublishRefused) && !errors.Is(err, endpoint.ErrReplyRefused) {
		t.Fatalf("a plainly minted credential on ctl.manager: %v, want the broker's refusal", err)
	}
}

func TestAReplySubjectOutsideTheSubtreeGetsNoAnswer(t *testing.T) {
	h := newHarness(t, 0)
	h.start("lead")
	h.start("peer")
	leadCreds, peerCreds := h.creds("lead"), h.creds("peer")
	lead := h.as(leadCreds)
	// Raw connections of both credentials, as an attacker holding lead's would use it and as
	// peer's runtime listens.
	attacker := rawConn(t, h, leadCreds)
	victim := rawConn(t, h, peerCreds)
	n := wire.NewNames("main")
	subject := n.CtlSubject(wire.ManagerService, lead.ID())
	peerID := mustAgent(t, h, "peer").ID
	req, _ := json.Marshal(wire.ControlRequest{Op: wire.OpManagerList, From: wire.EndpointRef{ID: lead.ID(), Name: "lead"}})
	tests := []struct {
		name, reply string
		watch       *nats.Conn
		watchOn     string
	}{
		{"the reply subtree of another agent", n.CtlSubject(wire.ManagerService, peerID) + ".reply.stolen", victim,
			n.CtlSubject(wire.ManagerService, peerID) + ".reply.>"},
		{"the requester's own inbox", wire.InboxPrefix(lead.ID()) + ".stolen", attacker, wire.InboxPrefix(lead.ID()) + ".>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []string
			sub, err := tt.watch.Subscribe(tt.watchOn, func(m *nats.Msg) {
				mu.Lock()
				got = append(got, m.Subject)
				mu.Unlock()
			})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Unsubscribe()
			if err := tt.watch.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := attacker.PublishMsg(&nats.Msg{Subject: subject, Reply: tt.reply, Data: req}); err != nil {
				t.Fatal(err)
			}
			// The service is alive and answers a request in the subtree, after the other one.
			if _, err := request(lead, wire.OpManagerList, nil); err != nil {
				t.Fatalf("list in the subtree: %v", err)
			}
			// An answer would be on its way by now; give it half a second to arrive.
			answered := await.Until(500*time.Millisecond, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(got) > 0
			})
			if answered {
				t.Fatalf("the service answered on %v", got)
			}
		})
	}
}

func rawConn(t *testing.T, h *harness, creds []byte) *nats.Conn {
	t.Helper()
	c, err := endpoint.ParseCredential(creds)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect("", nats.InProcessServer(h.m.InProcess()), nats.UserJWTAndSeed(jwtAndSeed(t, creds)),
		nats.CustomInboxPrefix(wire.InboxPrefix(c.ID)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func mustAgent(t *testing.T, h *harness, name string) admin.AgentInfo {
	t.Helper()
	a, ok := h.agent(name)
	if !ok {
		t.Fatalf("%s is not supervised", name)
	}
	return a
}

func TestAFloodOfSpawnsIsBounded(t *testing.T) {
	h := newHarness(t, 2)
	h.start("lead")
	lead := h.as(h.creds("lead"))
	var wg sync.WaitGroup
	errs := make([]error, 20)
	names := []string{"worker", "peer", "spawner", "wide"}
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = request(lead, wire.OpManagerSpawn, wire.ManagerNameArgs{Name: names[i%len(names)]})
		})
	}
	wg.Wait()
	n := 0
	for _, a := range h.sup.List() {
		if a.SpawnedBy == lead.ID() {
			n++
		}
	}
	if n > 2 {
		t.Fatalf("a flood of spawns ran %d agents, the bound is 2", n)
	}
	for _, err := range errs {
		if err != nil && !errors.Is(err, wire.ErrControlRefused) {
			t.Fatalf("a flood request failed otherwise than refused: %v", err)
		}
	}
	if _, err := request(lead, wire.OpManagerList, nil); err != nil {
		t.Fatalf("the service after the flood: %v", err)
	}
}

// jwtAndSeed are the JWT and seed of decorated .creds content.
func jwtAndSeed(t *testing.T, creds []byte) (string, string) {
	t.Helper()
	seed, err := endpoint.CredentialSeed(creds)
	if err != nil {
		t.Fatal(err)
	}
	s := string(creds)
	i := strings.Index(s, "-----BEGIN NATS USER JWT-----")
	j := strings.Index(s, "------END NATS USER JWT------")
	if i < 0 || j < 0 {
		t.Fatal(fmt.Errorf("no JWT block"))
	}
	return strings.TrimSpace(s[i+len("-----BEGIN NATS USER JWT-----") : j]), seed
}

func TestARequestInAnotherAgentsNameIsRefused(t *testing.T) {
	h := newHarness(t, 0)
	h.start("lead")
	h.start("peer")
	leadCreds := h.creds("lead")
	lead := h.as(leadCreds)
	peerID := mustAgent(t, h, "peer").ID
	n := wire.NewNames("main")

	t.Run("from.id of another agent is refused", func(t *testing.T) {
		attacker := rawConn(t, h, leadCreds)
		subject := n.CtlSubject(wire.ManagerService, lead.ID())
		reply := wire.ControlReplySubject(subject)
		sub, err := attacker.SubscribeSync(reply)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := json.Marshal(wire.ControlRequest{Op: wire.OpManagerDespawn, From: wire.EndpointRef{ID: peerID, Name: "peer"}})
		if err := attacker.PublishMsg(&nats.Msg{Subject: subject, Reply: reply, Data: req}); err != nil {
			t.Fatal(err)
		}
		msg, err := sub.NextMsg(30 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		r, err := wire.DecodeControlReply(msg.Data)
		if err != nil || r.OK || !strings.Contains(r.Error, wire.ReasonSenderMismatch) {
			t.Fatalf("answer %+v (%v), want a sender-mismatch refusal", r, err)
		}
		if _, ok := h.agent("peer"); !ok {
			t.Fatal("peer was despawned in its name")
		}
	})
	t.Run("the subject of another agent is refused by the broker", func(t *testing.T) {
		violations := make(chan error, 4)
		c, err := endpoint.ParseCredential(leadCreds)
		if err != nil {
			t.Fatal(err)
		}
		jwt, seed := jwtAndSeed(t, leadCreds)
		nc, err := nats.Connect("", nats.InProcessServer(h.m.InProcess()), nats.UserJWTAndSeed(jwt, seed),
			nats.CustomInboxPrefix(wire.InboxPrefix(c.ID)),
			nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { violations <- err }))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		req, _ := json.Marshal(wire.ControlRequest{Op: wire.OpManagerDespawn, From: wire.EndpointRef{ID: peerID, Name: "peer"}})
		subject := n.CtlSubject(wire.ManagerService, peerID)
		if err := nc.PublishMsg(&nats.Msg{Subject: subject, Reply: wire.ControlReplySubject(subject), Data: req}); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-violations:
			if !strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
				t.Fatalf("the broker answered %v, want a permissions violation", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the broker let lead publish on peer's manager subject")
		}
		if _, ok := h.agent("peer"); !ok {
			t.Fatal("peer was despawned in its name")
		}
	})
}

func TestARequestDeliveredTwiceIsServedOnce(t *testing.T) {
	h := newHarness(t, 0)
	h.start("lead")
	creds := h.creds("lead")
	lead := h.as(creds)
	nc := rawConn(t, h, creds)
	subject := wire.NewNames("main").CtlSubject(wire.ManagerService, lead.ID())
	answers, err := nc.SubscribeSync(subject + ".reply.>")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := json.Marshal(wire.ControlRequest{Op: wire.OpManagerList, From: wire.EndpointRef{ID: lead.ID(), Name: "lead"}})
	first, second, other := wire.ControlReplySubject(subject), wire.ControlReplySubject(subject), wire.ControlReplySubject(subject)
	for _, r := range []struct{ reply, id string }{{first, "one-request"}, {second, "one-request"}, {other, "another"}} {
		if err := nc.PublishMsg(&nats.Msg{Subject: subject, Reply: r.reply, Data: req,
			Header: nats.Header{wire.RequestIDHeader: {r.id}}}); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]bool{}
	for len(got) < 2 {
		m, err := answers.NextMsg(30 * time.Second)
		if err != nil {
			t.Fatalf("answers so far %v: %v", got, err)
		}
		got[m.Subject] = true
	}
	if !got[first] || !got[other] {
		t.Fatalf("answered %v, want the first copy and the other request", got)
	}
	if m, err := answers.NextMsg(300 * time.Millisecond); err == nil {
		t.Fatalf("the second copy was answered too, on %s", m.Subject)
	}
}
