package cli

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
)

// clusterSettle bounds the waits for a cluster of `cotal up` processes to settle after its
// start: each node opens its buckets while the streams elect leaders, which takes several
// rounds on a loaded machine.
const clusterSettle = time.Minute

// TestAClusterOfThreeUpProcesses runs the commands of docs/cluster.md as three `cotal up`
// processes on loopback: a credential minted on the key-store node after start posts through
// node 1 and reads the post back through node 3, node 3 says where to mint, and `cotal status`
// on the key-store node shows the cluster and each stream's replicas; a mint on node 2's
// directory, while it runs and once it stopped, names the key-store node. A nats-server that
// dials node 1's route port without the trust file's secret and certificate is refused.
func TestAClusterOfThreeUpProcesses(t *testing.T) {
	t.Parallel()
	bin := cotalBin(t)
	nodes, peers, dirs := upCluster(t, bin)
	refusesARogueRoute(t, peers[0])
	if out := nodes[2].out.String(); !strings.Contains(out, "cluster:  demo") || !strings.Contains(out, "mint credentials on the node that holds the key store") {
		t.Errorf("node 3's banner does not describe the cluster:\n%s", out)
	}

	alice, bob := filepath.Join(t.TempDir(), "alice.creds"), filepath.Join(t.TempDir(), "bob.creds")
	for _, args := range [][]string{
		{"auth", "mint", "--dir", dirs[0], "--name", "alice", "--subscribe", "general", "--allow-publish", "general", "--out", alice},
		{"auth", "mint", "--dir", dirs[0], "--name", "bob", "--subscribe", "general", "--out", bob},
		{"send", "--link", nodes[0].link, "--creds", alice, "general", "hello from node 1"},
	} {
		if out, errOut, code := runCotal(t, bin, args...); code != 0 {
			t.Fatalf("cotal %v exited %d:\n%s%s", args, code, out, errOut)
		}
	}
	out, errOut, code := runCotal(t, bin, "history", "--link", nodes[2].link, "--creds", bob, "general")
	if code != 0 || !strings.Contains(out, "hello from node 1") {
		t.Fatalf("history through node 3 exited %d:\n%s%s", code, out, errOut)
	}
	// Streams are provisioned on the key-store node, so its status shows their replicas; right
	// after the start a follower may still be catching up. On a loaded machine a node may need
	// several rounds to open the lease bucket while the streams elect their leaders.
	await.Check(t, clusterSettle, 100*time.Millisecond, func() error {
		out, errOut, code := runCotal(t, bin, "status", "--dir", dirs[0])
		for _, want := range []string{"cluster demo, this node", "meta leader cotal-", "R3 leader cotal-"} {
			if code != 0 || !strings.Contains(out, want) {
				return fmt.Errorf("status exited %d without %q:\n%s%s", code, want, out, errOut)
			}
		}
		return nil
	})
	await.Check(t, clusterSettle, 100*time.Millisecond, func() error {
		out, errOut, code := runCotal(t, bin, "status", "--dir", dirs[2])
		if want := "space main backstop: runs on cotal-"; code != 0 || !strings.Contains(out, want) {
			return fmt.Errorf("node 3's status exited %d without %q:\n%s%s", code, want, out, errOut)
		}
		return nil
	})
	// A node without the key store says which node mints, running or stopped, and a stopped
	// one gets no key store of its own.
	_, port, _ := net.SplitHostPort(peers[0])
	keyNode := "node cotal-" + port + " holds it"
	mintAt := func(dir string) error {
		_, errOut, code := runCotal(t, bin, "auth", "mint", "--dir", dir, "--name", "carol", "--out", filepath.Join(t.TempDir(), "carol.creds"))
		if code == 0 || !strings.Contains(errOut, "holds no key store") || !strings.Contains(errOut, keyNode) {
			return fmt.Errorf("mint on %s exited %d without naming the key-store node (%q):\n%s", dir, code, keyNode, errOut)
		}
		return nil
	}
	if err := mintAt(dirs[1]); err != nil {
		t.Errorf("while node 2 runs: %v", err)
	}
	for _, n := range nodes {
		n.stop(t)
	}
	if err := mintAt(dirs[1]); err != nil {
		t.Errorf("while node 2 is stopped: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dirs[1], provisioner.KeysFile)); err == nil {
		t.Error("a mint on a stopped member's directory created a key store there")
	}
}

// upCluster starts three `cotal up` processes as docs/cluster.md does, on loopback ports of
// their own, and waits for each one's join link; it returns the nodes, their route addresses
// and their data directories. Node 0 holds the key store.
func upCluster(t *testing.T, bin string) (nodes []*upProcess, peers, dirs []string) {
	t.Helper()
	peers = []string{spacetest.FreeAddr(t), spacetest.FreeAddr(t), spacetest.FreeAddr(t)}
	dirs = []string{t.TempDir(), t.TempDir(), t.TempDir()}
	cluster := func(i int) []string {
		return []string{"--cluster-name", "demo", "--cluster-listen", peers[i], "--cluster-peers", strings.Join(peers, ",")}
	}
	trust, backstop := filepath.Join(dirs[0], space.TrustFile), filepath.Join(dirs[0], space.BackstopFile)
	nodes = []*upProcess{launchUp(t, bin, dirs[0], cluster(0)...)}
	await.True(t, 30*time.Second, "the key-store node's trust and backstop files", func() bool {
		_, err := os.Stat(trust)
		_, err2 := os.Stat(backstop)
		return err == nil && err2 == nil
	})
	for i := 1; i < 3; i++ {
		nodes = append(nodes, launchUp(t, bin, dirs[i], append(cluster(i), "--cluster-trust", trust, "--cluster-backstop", backstop)...))
	}
	for _, n := range nodes {
		n.waitLink(t)
	}
	return nodes, peers, dirs
}

// TestAClusterThatLostANodeKeepsAnswering kills the key-store node with SIGKILL, as a crash
// or a pulled plug would: a send through another node succeeds, saying what it waits for if
// it waits past 2 s, the post reads back through the third node, and status on a survivor
// shows the lost node OFFLINE.
func TestAClusterThatLostANodeKeepsAnswering(t *testing.T) {
	t.Parallel()
	bin := cotalBin(t)
	nodes, peers, dirs := upCluster(t, bin)
	alice, bob := filepath.Join(t.TempDir(), "alice.creds"), filepath.Join(t.TempDir(), "bob.creds")
	cotal(t, bin, "auth", "mint", "--dir", dirs[0], "--name", "alice", "--subscribe", "general", "--allow-publish", "general", "--out", alice)
	cotal(t, bin, "auth", "mint", "--dir", dirs[0], "--name", "bob", "--subscribe", "general", "--out", bob)
	cotal(t, bin, "send", "--link", nodes[1].link, "--creds", alice, "general", "before the loss")
	if err := nodes[0].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, errOut, code := runCotal(t, bin, "send", "--link", nodes[1].link, "--creds", alice, "general", "after the loss")
	took := time.Since(start)
	t.Logf("the send after the loss took %v:\n%s%s", took, out, errOut)
	if code != 0 {
		t.Fatalf("a send through a surviving node exited %d:\n%s%s", code, out, errOut)
	}
	if took > slowAfter+time.Second && !strings.Contains(errOut, "cotal: waiting for the mesh at ") {
		t.Errorf("a send that took %v said nothing of what it waited for:\n%s", took, errOut)
	}
	historyHas(t, bin, nodes[2].link, bob, "after the loss")
	_, port, _ := net.SplitHostPort(peers[0])
	await.Check(t, 60*time.Second, 500*time.Millisecond, func() error {
		out, errOut, _ := runCotal(t, bin, "status", "--dir", dirs[1])
		for line := range strings.Lines(out) {
			if strings.Contains(line, "cotal-"+port) && strings.Contains(line, "OFFLINE") {
				return nil
			}
		}
		return fmt.Errorf("status on node 2 does not show node 1 OFFLINE:\n%s%s", out, errOut)
	})
}

// refusesARogueRoute dials the route listener at addr from a plain nats-server of the
// cluster's name, without the route secret or certificate, and fails the test unless the
// route is closed before it joins.
func refusesARogueRoute(t *testing.T, addr string) {
	t.Helper()
	rogue, log := spacetest.Rogue(t, server.Options{Routes: []*url.URL{{Scheme: "nats", Host: addr}},
		Cluster: server.ClusterOpts{Name: "demo", Host: "127.0.0.1", Port: server.RANDOM_PORT, ConnectRetries: -1}})
	await.True(t, 30*time.Second, "the node to close the rogue route", func() bool {
		return log.Has("route", "closed") || log.Has("route", "error")
	})
	if n := rogue.NumRoutes(); n != 0 {
		t.Errorf("a route without the secret joined node 1 (%d routes):\n%s", n, log)
	}
}
