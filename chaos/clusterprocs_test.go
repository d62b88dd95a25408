package chaos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cotal-go/cotal/chaos"
	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/testcert"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
)

// clusterProcs are three `cotal up` processes forming one cluster, as the commands of
// docs/cluster.md start them: node 1 holds the key store (and first takes the durable
// backstop), nodes 2 and 3 start from its trust file and backstop file, so either takes the
// backstop over when node 1 dies.
type clusterProcs struct {
	nodes []*meshProc
	dirs  []string
}

// clusterPlace says where the nodes of a cluster run: on loopback with free ports (the zero
// value), or each on its own address, run through a command prefix such as `ip netns exec`.
type clusterPlace struct {
	hosts []string             // per node: the address its client and route listeners bind
	wrap  func(i int) []string // per node: the command prefix that runs `cotal up`
}

// Fixed ports of a node with an address of its own: nothing else listens there.
const (
	placedClientPort = "4222"
	placedRoutePort  = "6222"
)

// startClusterProcs starts the three nodes on loopback.
func startClusterProcs(t *testing.T, b bins) clusterProcs {
	t.Helper()
	return startClusterAt(t, b, clusterPlace{})
}

// startClusterAt starts the three nodes where place says. The key-store node writes its
// trust file at start but prints its join link only once JetStream has a leader, which needs
// the other two: so it is launched first, the others once the file exists, and all three are
// waited for.
func startClusterAt(t *testing.T, b bins, place clusterPlace) clusterProcs {
	t.Helper()
	routes := []string{spacetest.FreeAddr(t), spacetest.FreeAddr(t), spacetest.FreeAddr(t)}
	if place.hosts != nil {
		for i, h := range place.hosts {
			routes[i] = net.JoinHostPort(h, placedRoutePort)
		}
	}
	c := clusterProcs{dirs: []string{t.TempDir(), t.TempDir(), t.TempDir()}}
	var routeTLS []string
	if place.hosts != nil {
		// Routes beyond loopback need certificates of their own; one for every address serves
		// all three nodes.
		cert, key := testcert.Write(t, "chaos route", place.hosts...)
		routeTLS = []string{"--cluster-tls-cert", cert, "--cluster-tls-key", key, "--cluster-tls-ca", cert}
	}
	args := func(i int) []string {
		a := []string{"--cluster-name", "chaos", "--cluster-listen", routes[i], "--cluster-peers", strings.Join(routes, ","),
			"--server-name", fmt.Sprint("node", i+1)}
		a = append(a, routeTLS...)
		if i > 0 {
			a = append(a, "--cluster-trust", filepath.Join(c.dirs[0], space.TrustFile),
				"--cluster-backstop", filepath.Join(c.dirs[0], space.BackstopFile))
		}
		return a
	}
	launch := func(i int) *meshProc {
		if place.hosts == nil {
			return launchMesh(t, b, c.dirs[i], args(i)...)
		}
		return launchMeshAt(t, b, c.dirs[i], net.JoinHostPort(place.hosts[i], placedClientPort), place.wrap(i), args(i)...)
	}
	c.nodes = append(c.nodes, launch(0))
	await.True(t, 60*time.Second, "the key-store node's trust and backstop files", func() bool {
		_, err := os.Stat(filepath.Join(c.dirs[0], space.TrustFile))
		_, err2 := os.Stat(filepath.Join(c.dirs[0], space.BackstopFile))
		return err == nil && err2 == nil
	})
	for i := 1; i < 3; i++ {
		c.nodes = append(c.nodes, launch(i))
	}
	for _, n := range c.nodes {
		n.ready()
	}
	return c
}

// resumedAfter is how many publishes the survivors must acknowledge after a kill for the
// cluster to count as serving again: more than the two publishers can have had in flight.
const resumedAfter = 20

// publishGap paces each publisher. r3 is away for an outage plus its node's restart, and the
// trusted reader refuses durable copies past DLV's per-member bound (1000, delivery/handoffquota.go)
// as a reported gap; two publishers at this pace owe r3 at most 25 channel copies a second,
// which keeps the long tier's outages well under it.
const publishGap = 40 * time.Millisecond

// startClusterPublishers starts one publisher through each of nodes, each sending DMs to dms
// and posts to ledger every publishGap with agentproc's extra flags, and returns them with
// their journals.
func startClusterPublishers(t *testing.T, b bins, keyDir string, nodes []*meshProc, dms []string, extra ...string) ([]*publisher, []string) {
	t.Helper()
	var pubs []*publisher
	var journals []string
	for i, node := range nodes {
		cred := mintCLI(t, b, keyDir, fmt.Sprintf("p%d", i), "--allow-publish", "ledger")
		p := &publisher{cred: cred, journal: filepath.Join(keyDir, cred.Name+".jsonl"),
			args: append([]string{"-dm", strings.Join(dms, ","), "-channel", "ledger", "-gap", publishGap.String()}, extra...)}
		p.start(t, b, node.Link(), untilStopped)
		pubs, journals = append(pubs, p), append(journals, p.journal)
	}
	return pubs, journals
}

// ackedCount counts the acknowledged publishes in journals so far.
// publishPhase lets the publishers run for at least d and until they have had resumedAfter
// more publishes acknowledged, so every phase of a cluster scenario carries traffic however
// slowly the machine starts them. The journals are read every 100 ms.
func publishPhase(t *testing.T, d time.Duration, journals ...string) {
	t.Helper()
	began, before := time.Now(), ackedCount(t, journals...)
	await.Check(t, d+tier.drain, 100*time.Millisecond, func() error {
		if acked := ackedCount(t, journals...) - before; acked < resumedAfter {
			return fmt.Errorf("%d of %d publishes acknowledged in this phase", acked, resumedAfter)
		}
		if ran := time.Since(began); ran < d {
			return fmt.Errorf("the phase has run %v of %v", ran.Round(time.Millisecond), d)
		}
		return nil
	})
}

func ackedCount(t *testing.T, journals ...string) int {
	t.Helper()
	pubs, _ := chaos.FromJournal(readJournals(t, journals...))
	n := 0
	for _, p := range pubs {
		if p.Acked {
			n++
		}
	}
	return n
}

// joinThrough starts r's next incarnation through node, joined to ledger, and returns the state
// the join reached at connect. The first must be durable; a later one may come back "durable
// backstop unavailable" when the control service answers after the endpoint's 2 s budget, since
// its membership record from the first incarnation holds either way.
func (r *receiverProc) joinThrough(t *testing.T, b bins, node *meshProc) string {
	t.Helper()
	r.incarnation++
	inc := fmt.Sprintf("%s.%d", r.cred.Name, r.incarnation)
	r.proc = startAgent(t, b, inc, "-link", node.Link(), "-creds", r.cred.Creds, "-journal", r.journal,
		"-incarnation", inc, "-join", "ledger")
	var state string
	joined := await.Until(time.Minute, func() bool {
		for _, e := range readJournals(t, r.journal) {
			if e.Event == chaos.EventJoined && e.Incarnation == inc {
				state = e.Kind
			}
		}
		return state != ""
	})
	if !joined || (r.incarnation == 1 && state != string(endpoint.JoinedDurable)) {
		t.Fatalf("%s joined ledger through %s as %q; output:\n%s\nnode:\n%s",
			inc, node.Link(), state, tail(r.proc.out.String(), 3000), tail(node.out.String(), 3000))
	}
	return state
}

// owedTo narrows audience to the publishes of kind that receiver id is owed.
func owedTo(audience func(chaos.Publish) chaos.Audience, id, kind string) func(chaos.Publish) chaos.Audience {
	return func(p chaos.Publish) chaos.Audience {
		if p.Kind != kind || !slices.Contains(audience(p).Receivers, id) {
			return chaos.Audience{}
		}
		return chaos.Audience{Receivers: []string{id}}
	}
}

// catchUp waits until r's journal holds every publish of owed that audience gives it, and
// returns how long that took; it fails the test after tier.drain.
func catchUp(t *testing.T, owed []chaos.Publish, r *receiverProc, audience func(chaos.Publish) chaos.Audience) time.Duration {
	t.Helper()
	begin := time.Now()
	var f chaos.Figures
	if !await.Until(tier.drain, func() bool {
		_, got := chaos.FromJournal(readJournals(t, r.journal))
		f = chaos.Check(owed, got, audience)
		return f.Lost == 0
	}) {
		t.Errorf("%s did not read what it was owed within %v: %v", r.proc.name, tier.drain, f.Err())
	}
	return time.Since(begin)
}

// meshStatus is `cotal status --json` of the mesh on dir. It exits 1 on an unhealthy or
// incomplete status, which still prints the status.
func meshStatus(b bins, dir string) (*space.Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, b.cotal, "status", "--dir", dir, "--json").Output()
	var st space.Status
	if jerr := json.Unmarshal(out, &st); jerr != nil {
		return nil, fmt.Errorf("cotal status: %w; its output does not decode: %w", err, jerr)
	}
	return &st, nil
}

// backstopHolder is the node that holds space main's backstop lease, as the status of the mesh
// on dir names it, or "" when it names none or cannot be read.
func backstopHolder(t *testing.T, b bins, dir string) string {
	t.Helper()
	st, err := meshStatus(b, dir)
	if err != nil || st.Cluster == nil || len(st.Cluster.Backstops) == 0 {
		return ""
	}
	return st.Cluster.Backstops[0].Node
}

// node1Lag is "" when node 1's status shows it leading or holding a current copy of every
// stream of space main, else what it shows.
func node1Lag(t *testing.T, b bins, dir string) string {
	t.Helper()
	st, err := meshStatus(b, dir)
	if err != nil {
		return err.Error()
	}
	if len(st.Spaces) == 0 {
		return "no space yet"
	}
	for _, s := range st.Spaces[0].Streams {
		current := s.Leader == "node1" || slices.ContainsFunc(s.Followers, func(p space.Peer) bool {
			return p.Name == "node1" && p.Current && !p.Offline
		})
		if !current {
			return fmt.Sprintf("stream %+v", s)
		}
	}
	return ""
}

// onlyFinalPresenceFailed says whether the one error an agent process ended with, the last
// lines of its output out, is its Endpoint's Close failing to write the final offline presence.
func onlyFinalPresenceFailed(out string) bool {
	out = strings.TrimSpace(out)
	last := out[strings.LastIndex(out, "\nagentproc: ")+1:]
	return strings.HasPrefix(last, "agentproc: final offline presence:") && !strings.Contains(last, "\n")
}

// lineWith is the first line of out that contains s, or "".
func lineWith(out, s string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}

// warnings are the last lines of the nodes' logs at warning level or above, or about the
// backstop, for failure messages.
func warnings(nodes ...*meshProc) string {
	var out []string
	for _, n := range nodes {
		for _, line := range strings.Split(n.out.String(), "\n") {
			if strings.Contains(line, "connect to route") {
				continue // a dead node's peers say so every second
			}
			if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") || strings.Contains(line, "backstop") {
				out = append(out, line)
			}
		}
	}
	if len(out) > 80 {
		out = out[len(out)-80:]
	}
	return strings.Join(out, "\n")
}

// ledgerReceivers mints r1, r2 and r3 in the key-store node's directory dir, each reading
// "ledger"; r1 and r2 join it durably through at1 and at2, surfacing into the returned sink,
// and r3, a receiver process, is returned for the test to start. ids are the three ids in order.
func ledgerReceivers(t *testing.T, b bins, dir string, at1, at2 *meshProc) (s *sink, r3 *receiverProc, ids []string) {
	t.Helper()
	r1 := mintCLI(t, b, dir, "r1", "--subscribe", "ledger")
	r2 := mintCLI(t, b, dir, "r2", "--subscribe", "ledger")
	r3 = &receiverProc{cred: mintCLI(t, b, dir, "r3", "--subscribe", "ledger"), journal: filepath.Join(dir, "r3.jsonl")}
	s = newSink()
	for _, r := range []struct {
		cred minted
		node *meshProc
	}{{r1, at1}, {r2, at2}} {
		ep := connectTCP(t, r.node.Link(), r.cred, s.handler(r.cred.ID, r.cred.Name), func(o *endpoint.Options) {
			o.Channels = []string{"ledger"}
		})
		joinedDurable(t, ep, "ledger")
	}
	return s, r3, []string{r1.ID, r2.ID, r3.cred.ID}
}
