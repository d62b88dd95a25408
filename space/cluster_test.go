package space_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/testlog"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// clusterSlot lets one test's cluster run at a time: two clusters are six servers
// replicating R3 streams, and beside the other packages' tests under -race on two cores
// their stream creation took past 20 s in CI.
var clusterSlot = make(chan struct{}, 1)

// clusterStartBudget bounds startCluster. Starting is not what the cluster tests measure, so
// it is generous: a loaded CI machine may take tens of seconds to elect the JetStream meta
// leader and place twelve R3 streams.
const clusterStartBudget = 90 * time.Second

// clusterAckWait is the cluster tests' ack wait of the bind-only consumers.
const clusterAckWait = 10 * time.Second

// within is a context for one subtest, so a subtest that runs out of time does not take the
// ones after it down with it.
func within(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// startCluster starts three meshes as one cluster on loopback: node 0 holds the key store
// and serves HTTP, nodes 1 and 2 start from its trust file. All three must be up before JetStream has the
// three peers its R3 streams need, so they start at once.
//
// With backstop, nodes 1 and 2 also get node 0's cluster backstop file, so either may take
// over the spaces' durable backstop.
func startCluster(t *testing.T, backstop ...bool) []*space.Mesh {
	t.Helper()
	return startClusterWith(t, func(i int, o *space.Options) {
		if i > 0 && len(backstop) > 0 && backstop[0] {
			o.Cluster.Backstop = filepath.Join(filepath.Dir(o.Cluster.Trust), space.BackstopFile)
		}
	})
}

// startClusterWith is startCluster with tune applied to each node's options. The route ports
// are chosen free before the nodes start, since each node names the others'; another process
// on the machine may take one meanwhile, so a start whose route port was taken is tried again
// on new ports.
func startClusterWith(t *testing.T, tune func(node int, o *space.Options)) []*space.Mesh {
	t.Helper()
	clusterSlot <- struct{}{}
	t.Cleanup(func() { <-clusterSlot })
	for attempt := 1; ; attempt++ {
		meshes, err := tryCluster(t, tune)
		if err == nil {
			closeTogether(t, meshes)
			return meshes
		}
		closeNow(meshes)
		if attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatalf("start the cluster: %v", err)
		}
		t.Logf("start the cluster, attempt %d: %v; trying again on other ports", attempt, err)
	}
}

// tryCluster starts three nodes on fresh ports; the meshes that started are returned with
// the error of any that did not.
func tryCluster(t *testing.T, tune func(node int, o *space.Options)) ([]*space.Mesh, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterStartBudget)
	defer cancel()
	peers := []string{spacetest.FreeAddr(t), spacetest.FreeAddr(t), spacetest.FreeAddr(t)}
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	opts := func(i int) space.Options {
		// A copy a member's Endpoint held when its node died waits out the ack wait; a
		// short one keeps such a copy within a test's deadline.
		o := space.Options{Dir: dirs[i], Memory: true, Listen: "127.0.0.1:0", AckWait: clusterAckWait,
			Cluster: space.ClusterOptions{Name: "test", Listen: peers[i], Peers: peers, ServerName: fmt.Sprintf("node%d", i)}}
		if i > 0 {
			o.Cluster.Trust = filepath.Join(dirs[0], space.TrustFile)
		} else {
			o.HTTP = "127.0.0.1:0"
		}
		tune(i, &o)
		return o
	}
	began := time.Now()
	meshes := make([]*space.Mesh, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	first := make(chan struct{})
	wg.Go(func() { defer close(first); meshes[0], errs[0] = space.Start(ctx, opts(0)) })
	failed := func() bool {
		select {
		case <-first:
			return errs[0] != nil
		default:
			return false
		}
	}
	await.True(t, 30*time.Second, "the key-store node's trust and backstop files, or its failure", func() bool {
		_, err := os.Stat(filepath.Join(dirs[0], space.TrustFile))
		_, err2 := os.Stat(filepath.Join(dirs[0], space.BackstopFile))
		return (err == nil && err2 == nil) || failed()
	})
	if failed() {
		return meshes, errs[0]
	}
	for i := 1; i < 3; i++ {
		wg.Go(func() { meshes[i], errs[i] = space.Start(ctx, opts(i)) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return meshes, err
	}
	t.Logf("the cluster started in %v", time.Since(began).Round(time.Millisecond))
	return meshes, nil
}

// closeNow closes the nodes of meshes that started (nil for one that did not), all at once.
func closeNow(meshes []*space.Mesh) {
	var closing sync.WaitGroup
	for _, m := range meshes {
		if m != nil {
			closing.Go(func() { _ = m.Close(context.Background()) })
		}
	}
	closing.Wait()
}

// closeTogether closes the nodes of meshes (nil for one that did not start) at the end of the
// test, all at once: a node leaving a clustered JetStream hands over its leaderships first.
func closeTogether(t *testing.T, meshes []*space.Mesh) {
	t.Cleanup(func() { closeNow(meshes) })
}

// joinAt connects cred's Endpoint to node over TCP, joined to channels, its deliveries sent
// to got.
func joinAt(ctx context.Context, t *testing.T, node *space.Mesh, cred *provisioner.Credential, got chan<- endpoint.Delivery, channels ...string) *endpoint.Endpoint {
	t.Helper()
	link, err := node.Link("main")
	if err != nil {
		t.Fatal(err)
	}
	creds, err := cred.Creds()
	if err != nil {
		t.Fatal(err)
	}
	// Only the channels named: a caller that names none means no live copy and no backfill.
	ep, err := endpoint.Connect(ctx, endpoint.Options{Link: link, Creds: creds, Name: cred.Name, Channels: channels,
		SkipCredentialChannels: true, Handler: func(_ context.Context, d endpoint.Delivery) error { got <- d; return nil }})
	if err != nil {
		t.Fatalf("%s connects to %s: %v", cred.Name, link, err)
	}
	t.Cleanup(func() { _ = ep.Close(context.Background()) })
	return ep
}

// receive waits until deliveries of kind with each of texts have arrived on got, in any order.
func receive(ctx context.Context, t *testing.T, got <-chan endpoint.Delivery, kind endpoint.MetaKind, texts ...string) {
	t.Helper()
	missing := map[string]bool{}
	for _, text := range texts {
		missing[text] = true
	}
	for len(missing) > 0 {
		select {
		case d := <-got:
			if d.Meta.Kind == kind {
				delete(missing, d.Message.Parts[0].Text)
			}
		case <-ctx.Done():
			t.Fatalf("no %v %q arrived", kind, slices.Collect(maps.Keys(missing)))
		}
	}
}

// TestAClusterOfThreeServesOneSpace: agents on different nodes exchange multicast, DM, anycast
// and durable copies; a credential minted after start works on a node without the key store,
// and its revocation reaches that node.
func TestAClusterOfThreeServesOneSpace(t *testing.T) {
	t.Parallel()
	nodes := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g := provisioner.Grants{Subscribe: []string{"general"}, AllowPublish: []string{"general"}}
	alice := mint(t, nodes[0], "alice", provisioner.ProfileAgent, g)
	bobGrants := g
	bobGrants.Role = "reviewer"
	bob := mint(t, nodes[0], "bob", provisioner.ProfileAgent, bobGrants)
	atAlice, atBob := make(chan endpoint.Delivery, 64), make(chan endpoint.Delivery, 64)
	a := joinAt(ctx, t, nodes[0], alice, atAlice, "general")
	b := joinAt(ctx, t, nodes[2], bob, atBob, "general")
	if res, ok := b.JoinStatus("general"); !ok || res.State != endpoint.JoinedDurable {
		t.Fatalf("bob's durable join through node 2: %+v", res)
	}

	text := func(s string) []wire.Part { return []wire.Part{wire.TextPart(s)} }
	if _, err := a.Send(ctx, "general", text("across the cluster")); err != nil {
		t.Fatal(err)
	}
	receive(ctx, t, atBob, endpoint.MetaChannel, "across the cluster")
	if _, err := a.SendDM(ctx, bob.ID, text("a DM across")); err != nil {
		t.Fatal(err)
	}
	receive(ctx, t, atBob, endpoint.MetaDM, "a DM across")
	if _, err := b.SendAnycast(ctx, "reviewer", text("a task")); err != nil {
		t.Fatal(err)
	}
	receive(ctx, t, atBob, endpoint.MetaAnycast, "a task")

	t.Run("a member offline through a burst gets every durable copy from another node", func(t *testing.T) {
		ctx := within(t, 90*time.Second)
		// Without replay the rejoin reads no history, so every copy comes from DLV_main. bob's
		// closed Endpoint leaves a pull request at the consumer leader, kept to its 30 s expiry
		// when it crossed a route; the mesh hands back what the broker gives it (docs/durable.md
		// "Pull requests nobody holds"), so the copies do not wait for it.
		noReplay := false
		if _, err := nodes[0].SetChannel(ctx, "main", space.ChannelUpdate{Channel: "general", Replay: &noReplay}); err != nil {
			t.Fatal(err)
		}
		closed := time.Now()
		if err := b.Close(ctx); err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			if _, err := a.Send(ctx, "general", text(fmt.Sprint("missed ", i))); err != nil {
				t.Fatal(err)
			}
		}
		back := make(chan endpoint.Delivery, 64)
		rejoined := joinAt(ctx, t, nodes[1], bob, back, "general")
		defer func() {
			if t.Failed() {
				res, _ := rejoined.JoinStatus("general")
				t.Logf("bob's rejoin through node 1: %+v\n%s", res, nodes[1].PlacementReport())
			}
		}()
		var missed []string
		for i := range 5 {
			missed = append(missed, fmt.Sprint("missed ", i))
		}
		receive(ctx, t, back, endpoint.MetaChannel, missed...)
		took := time.Since(closed)
		t.Logf("every durable copy arrived %v after bob closed", took.Round(time.Millisecond))
		// The mesh gives back what a pull of bob's closed Endpoint took within a fraction of a
		// second (37-342 ms under load), the copies the broker handed it before the mesh
		// watched it included; the bound sits below the ack wait, which is what such a copy
		// would wait without the give-back, with the rest left to a loaded machine.
		if bound := clusterAckWait - time.Second; took > bound {
			t.Errorf("the durable copies took %v, past %v: a pull bob's closed Endpoint left held them", took, bound)
		}
	})

	t.Run("a credential minted after start works on every node and its revocation reaches them", func(t *testing.T) {
		ctx := within(t, 60*time.Second)
		minted := time.Now()
		carol := mint(t, nodes[0], "carol", provisioner.ProfileAgent, g)
		joinAt(ctx, t, nodes[2], carol, make(chan endpoint.Delivery, 64), "general")
		t.Logf("minted on node 0, joined through node 2 %v later", time.Since(minted))
		revoked := time.Now()
		if err := nodes[0].Revoke(ctx, "main", carol.ID); err != nil {
			t.Fatal(err)
		}
		refusedConnect(t, nodes[2], carol)
		t.Logf("revoked on node 0, refused by node 2 %v later", time.Since(revoked))
	})

	t.Run("status shows every node, the meta leader and each stream's replicas", func(t *testing.T) {
		ctx := within(t, 60*time.Second)
		await.Check(t, 30*time.Second, 100*time.Millisecond, func() error { return clusterShape(ctx, nodes[0], nil) })
		if code, body := get(t, nodes[0].HTTPURL()+"/healthz"); code != http.StatusOK || !strings.Contains(body, `"cluster":"ok"`) {
			t.Fatalf("/healthz = %d %s", code, body)
		}
		_, metrics := get(t, nodes[0].HTTPURL()+"/metrics")
		for _, want := range []string{`cotal_connections{node="node0"}`, `cotal_stream_replica_current{node="node0",replica="node2",space="main",stream="CHAT_main"} 1`} {
			if !strings.Contains(metrics, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
		st, err := nodes[2].Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Cluster == nil || st.Cluster.Node != "node2" || len(st.Cluster.Nodes) != 3 || st.Cluster.MetaLeader == "" {
			t.Fatalf("node 2's cluster status: %+v", st.Cluster)
		}
		// What a start that cannot place its streams adds to its error.
		report := nodes[1].PlacementReport()
		for _, want := range []string{"node node1 sees", "meta leader \"node", "CHAT_main (group ", "DLV_main (group "} {
			if !strings.Contains(report, want) {
				t.Errorf("node 1's placement report lacks %q: %s", want, report)
			}
		}
		if strings.Contains(report, `leader ""`) {
			t.Errorf("a stream without a leader in a healthy cluster: %s", report)
		}
	})

	t.Run("a stopped node shows offline while the other two stay healthy", func(t *testing.T) {
		ctx := within(t, 60*time.Second)
		stopped := time.Now()
		if err := nodes[2].Close(ctx); err != nil {
			t.Fatal(err)
		}
		await.Check(t, 30*time.Second, 100*time.Millisecond, func() error {
			if err := clusterShape(ctx, nodes[0], []string{"node2"}); err != nil {
				return err
			}
			if code, body := get(t, nodes[0].HTTPURL()+"/healthz"); code != http.StatusOK {
				return fmt.Errorf("/healthz = %d %s", code, body)
			}
			return nil
		})
		t.Logf("node 2 shown offline, node 0 healthy %v after the stop", time.Since(stopped))
	})

	t.Run("with two nodes stopped status reports what it reads and names what it cannot", func(t *testing.T) {
		ctx := within(t, 60*time.Second)
		if err := nodes[1].Close(ctx); err != nil {
			t.Fatal(err)
		}
		// A leader that lost its quorum answers from its own copy until it steps down.
		await.True(t, 30*time.Second, "node 0's streams have stepped down to no leader", func() bool {
			jsi, err := nodes[0].Broker().Server().Jsz(&server.JSzOptions{Accounts: true, Streams: true})
			if err != nil {
				return false
			}
			for _, acc := range jsi.AccountDetails {
				for _, s := range acc.Streams {
					if s.Cluster != nil && s.Cluster.Leader != "" {
						return false
					}
				}
			}
			return true
		})
		asked := time.Now()
		st, err := nodes[0].Status(ctx)
		if err != nil {
			t.Fatalf("status failed wholly after %v: %v", time.Since(asked), err)
		}
		t.Logf("status answered in %v", time.Since(asked))
		if st.Cluster == nil || len(st.Cluster.Nodes) != 3 || len(st.Health) == 0 {
			t.Errorf("the cluster and health parts are missing: %+v", st)
		}
		// A leaderless stream's info is answered from the local copy, or times out; a
		// consumer's info fails (503) or is answered by a replica that has not stepped down.
		for _, s := range st.Spaces[0].Streams {
			if s.Leader != "" || s.Error != "" && !strings.Contains(s.Error, s.Name) {
				t.Errorf("stream %s, which has no leader, is shown with one or its error does not name it: %+v", s.Name, s)
			}
		}
		if len(st.Spaces[0].Members) != 2 {
			t.Errorf("members: %+v", st.Spaces[0].Members)
		}
		for _, mb := range st.Spaces[0].Members {
			for _, b := range []space.Backlog{mb.DM, mb.Durable} {
				if b.Error != "" && !strings.Contains(b.Error, b.Consumer) {
					t.Errorf("%s's unread consumer is not named: %+v", mb.Name, b)
				}
			}
		}
		unread := st.Errors()
		if len(unread) == 0 {
			t.Error("nothing was unread on two stopped nodes of three: the test proved nothing")
		}
		t.Logf("unread: %q", unread)
	})
}

// clusterShape is nil when node's status shows three nodes, current but for those of down,
// which show offline or unreachable; a meta leader; and every stream of space main R3 with a leader and two
// followers, current but for those on down. Else it says what differs.
func clusterShape(ctx context.Context, node *space.Mesh, down []string) error {
	st, err := node.Status(ctx)
	if err != nil {
		return err
	}
	c := st.Cluster
	if c == nil || c.MetaLeader == "" || len(c.Nodes) != 3 {
		return fmt.Errorf("cluster %+v", c)
	}
	for _, n := range c.Nodes {
		// Only the meta leader marks a stopped peer offline; another node sees its route gone.
		if isDown := slices.Contains(down, n.Name); isDown != (n.Offline || !n.Connected) || !isDown && !n.Current {
			return fmt.Errorf("node %+v", n)
		}
	}
	for _, s := range st.Spaces[0].Streams {
		if s.Replicas != 3 || s.Leader == "" || slices.Contains(down, s.Leader) || len(s.Followers) != 2 {
			return fmt.Errorf("stream %+v", s)
		}
		for _, f := range s.Followers {
			if !slices.Contains(down, f.Name) && !f.Current {
				return fmt.Errorf("stream %s follower %+v", s.Name, f)
			}
		}
	}
	return nil
}

// TestAStandaloneDataDirectoryIsRefusedAsAClusterNode: the streams of a mesh that ran alone
// would be hidden by clustered JetStream, so a cluster node refuses the directory and says why.
func TestAStandaloneDataDirectoryIsRefusedAsAClusterNode(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	alone, err := space.Start(ctx, space.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := alone.Close(ctx); err != nil {
		t.Fatal(err)
	}
	peer := spacetest.FreeAddr(t)
	m, err := space.Start(ctx, space.Options{Dir: dir, Listen: "127.0.0.1:0",
		Cluster: space.ClusterOptions{Name: "test", Listen: peer, Peers: []string{peer}}})
	if err == nil {
		_ = m.Close(ctx)
		t.Fatal("a standalone data directory started as a cluster node")
	}
	if !errors.Is(err, space.ErrStandaloneStore) || !strings.Contains(err.Error(), "empty data directory") {
		t.Fatalf("Start = %v, want ErrStandaloneStore saying what to do", err)
	}
}

// TestALostPeerIsNotLoggedAtEveryDial: a survivor dials a lost peer every second on each
// route of its pool; it logs the first failure at ERROR and then one in
// broker.ReconnectErrorReports, the dials between at debug only.
func TestALostPeerIsNotLoggedAtEveryDial(t *testing.T) {
	logs := &testlog.Buffer{}
	nodes := startClusterWith(t, func(i int, o *space.Options) {
		if i == 0 {
			o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		}
	})
	if err := nodes[2].Close(within(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	await.True(t, 60*time.Second, "node 0 to dial the lost node a fifth time", func() bool {
		return strings.Contains(logs.String(), "connect to route (attempt 5)")
	})
	for line := range strings.Lines(logs.String()) {
		if strings.Contains(line, "level=ERROR") && strings.Contains(line, "connect to route (attempt ") &&
			!strings.Contains(line, "(attempt 1)") {
			t.Errorf("a failed dial past the first logged at ERROR: %s", line)
		}
	}
}
