package chaos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cotal-go/cotal/chaos"
	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/space"
)

// What a node logs when it takes a space's backstop lease, and when it stops the backstop.
const (
	backstopTakenLine   = "this node runs the space's backstop"
	backstopStoppedLine = "this node stopped running the space's backstop"
)

// TestTheBackstopNodeKilledUnderLoadLosesNothing covers issue 14's kill -9 of the node that
// holds the key store and runs the durable backstop: three `cotal up` processes (sync always,
// R3 streams; nodes 2 and 3 hold the cluster backstop file), publishers sending numbered DMs
// and durable-channel posts through nodes 2 and 3, receivers connected through nodes 2 and 3
// throughout and a third, r3, through node 1. Each round r3 leaves (SIGTERM), node 1 is
// killed with SIGKILL, and while it is down:
//
//   - the survivors acknowledge publishes after at most a RAFT election;
//   - one of them takes the backstop lease once its record expires (wire.BackstopLeaseTTL);
//   - r3, offline meanwhile, connects through node 2 and gets every durable channel copy it
//     is owed, fanned out by the new holder (SPEC §8);
//   - a mint on a member's data directory is refused, naming node 1 as the key store.
//
// Node 1 then restarts on its data directory: it catches up every stream, r3 moves back to
// it and reads what it is owed through it, and node 1 does not take the lease back from the
// living holder. At the end every acknowledged publish surfaced at every receiver it owes and
// no receiver incarnation surfaced an id twice (SPEC §4).
//
// The dead node's fan-out may have pulled CHAT messages it never acknowledged: the new holder
// gets them only after the fanout consumer's 60 s AckWait, and a DM r3's closing incarnation
// had pulled waits out dm_<id>'s. So r3's catch-up through a survivor may take a minute, and
// the drain bounds (tier.drain, 150 s) exceed one ack wait.
func TestTheBackstopNodeKilledUnderLoadLosesNothing(t *testing.T) {
	if tier.backstopKills == 0 {
		t.Skip("the backstop moves after its 5 s lease and its unacknowledged entries after a 60 s ack wait; the long tier (make chaos) runs it")
	}
	t.Parallel()
	b := binaries(t)
	c := startClusterProcs(t, b)
	keys, n2, n3 := c.nodes[0], c.nodes[1], c.nodes[2]
	dir := c.dirs[0]
	r1 := mintCLI(t, b, dir, "r1", "--subscribe", "ledger")
	r2 := mintCLI(t, b, dir, "r2", "--subscribe", "ledger")
	r3 := &receiverProc{cred: mintCLI(t, b, dir, "r3", "--subscribe", "ledger"), journal: filepath.Join(dir, "r3.jsonl")}
	s := newSink()
	for _, r := range []struct {
		cred minted
		node *meshProc
	}{{r1, n2}, {r2, n3}} {
		ep := connectTCP(t, r.node.Link(), r.cred, s.handler(r.cred.ID, r.cred.Name), func(o *endpoint.Options) {
			o.Channels = []string{"ledger"}
		})
		joinedDurable(t, ep, "ledger")
	}
	r3.joinThrough(t, b, keys)
	pubs, journals := startClusterPublishers(t, b, dir, []*meshProc{n2, n3}, []string{r1.ID, r2.ID, r3.cred.ID})
	audience := func(p chaos.Publish) chaos.Audience {
		if p.Kind == chaos.KindDM {
			return chaos.Audience{Receivers: []string{p.Target}}
		}
		return chaos.Audience{Receivers: []string{r1.ID, r2.ID, r3.cred.ID}}
	}
	var f backstopFigures
	for round := range tier.backstopKills {
		time.Sleep(tier.clusterOutage / 2) // pacing: publishing with all three nodes up
		r3.proc.stop(t)
		f.killNode1(t, journals, keys, n2, n3)
		owed, _ := chaos.FromJournal(readJournals(t, journals...))
		r3.joinThrough(t, b, n2)
		f.survivorCopies = append(f.survivorCopies, catchUp(t, owed, r3, owedTo(audience, r3.cred.ID, chaos.KindChannel)))
		if round == 0 {
			mintRefusedWithoutKeyStore(t, b, c.dirs[1])
		}
		for time.Since(f.killed) < tier.clusterOutage {
			time.Sleep(20 * time.Millisecond) // pacing: the outage lasts at least tier.clusterOutage
		}
		f.restartNode1(t, b, journals, keys)
		r3.proc.stop(t)
		owed, _ = chaos.FromJournal(readJournals(t, journals...))
		r3.joinThrough(t, b, keys)
		f.node1Copies = append(f.node1Copies, catchUp(t, owed, r3, owedTo(audience, r3.cred.ID, chaos.KindChannel)))
		if strings.Contains(keys.out.String()[f.restartedAt:], backstopTakenLine) {
			t.Errorf("round %d: restarted node 1 took the backstop lease while a survivor held it", round+1)
		}
	}
	time.Sleep(tier.clusterOutage / 2) // pacing: publishing after the last restart too
	for _, p := range pubs {
		p.proc.stop(t)
		if p.proc.code != 0 {
			t.Fatalf("publisher %s exited %d:\n%s", p.proc.name, p.proc.code, tail(p.proc.out.String(), 3000))
		}
	}
	published, _ := chaos.FromJournal(readJournals(t, journals...))
	surfacings := func() []chaos.Surfacing {
		_, r3s := chaos.FromJournal(readJournals(t, r3.journal))
		return append(s.all(), r3s...)
	}
	begin := time.Now()
	await.Until(tier.drain, func() bool { return chaos.Check(published, surfacings(), audience).Lost == 0 })
	drainTime := time.Since(begin)
	r3.proc.stop(t)
	d := chaos.Check(published, surfacings(), audience)
	record(t, fmt.Sprintf("3-node cluster, key-store and backstop node kill -9 ×%d, ≥%v outage each", tier.backstopKills, tier.clusterOutage),
		joinNotes(deliveryFigures(d), f.String(), fmt.Sprintf("drained %v after publishing stopped", drainTime.Round(time.Millisecond))))
	if err := d.Err(); err != nil {
		t.Errorf("after %d kills of node 1: %v", tier.backstopKills, err)
	}
	for i, n := range f.during {
		if n == 0 {
			t.Errorf("outage %d: the survivors acknowledged no publish", i+1)
		}
	}
}

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

// backstopFigures are what the backstop-kill test measures, per round.
type backstopFigures struct {
	killed      time.Time
	restartedAt int // length of node 1's output when its latest incarnation started

	during         []int           // publishes acknowledged through the survivors while node 1 was down
	stalls         []time.Duration // kill to resumedAfter publishes acknowledged
	failovers      []time.Duration // kill to a survivor logging that it runs the backstop
	survivorCopies []time.Duration // r3 through node 2 to every channel copy owed
	downs          []time.Duration // kill to node 1's join link again
	rejoins        []time.Duration // node 1's restart to every stream current on it
	node1Copies    []time.Duration // r3 back through node 1 to every channel copy owed
	ackedAtKill    int             // publishes acknowledged when node 1 was killed last
}

// killNode1 kills node 1 and waits until the survivors acknowledge publishes again and one of
// them runs the backstop.
func (f *backstopFigures) killNode1(t *testing.T, journals []string, keys *meshProc, survivors ...*meshProc) {
	t.Helper()
	taken := func() int {
		n := 0
		for _, s := range survivors {
			n += strings.Count(s.out.String(), backstopTakenLine)
		}
		return n
	}
	before, tookBefore := ackedCount(t, journals...), taken()
	keys.kill()
	f.killed = time.Now()
	var stall, failover time.Duration
	for stall == 0 || failover == 0 {
		if stall == 0 && ackedCount(t, journals...) >= before+resumedAfter {
			stall = time.Since(f.killed)
		}
		if failover == 0 && taken() > tookBefore {
			failover = time.Since(f.killed)
		}
		if time.Since(f.killed) > tier.drain {
			t.Fatalf("%v after node 1 died: %d publishes acknowledged (want %d), backstop taken over: %v; the survivors' warnings:\n%s",
				tier.drain, ackedCount(t, journals...)-before, resumedAfter, failover > 0, warnings(survivors...))
		}
		time.Sleep(20 * time.Millisecond) // pacing: polling the journals and logs
	}
	f.stalls, f.failovers = append(f.stalls, stall), append(f.failovers, failover)
	f.ackedAtKill = before
}

// restartNode1 starts node 1 again on its data directory and waits until it holds a current
// copy of every stream of space main.
func (f *backstopFigures) restartNode1(t *testing.T, b bins, journals []string, keys *meshProc) {
	t.Helper()
	f.during = append(f.during, ackedCount(t, journals...)-f.ackedAtKill)
	f.restartedAt = len(keys.out.String())
	keys.start()
	restarted := time.Now()
	f.downs = append(f.downs, restarted.Sub(f.killed))
	var last string
	if !await.Until(tier.drain, func() bool {
		last = node1Lag(t, b, keys.dir)
		return last == ""
	}) {
		t.Errorf("restarted node 1 did not catch up within %v: %s", tier.drain, last)
	}
	f.rejoins = append(f.rejoins, time.Since(restarted))
}

// node1Lag is "" when node 1's status shows it leading or holding a current copy of every
// stream of space main, else what it shows.
func node1Lag(t *testing.T, b bins, dir string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, b.cotal, "status", "--dir", dir, "--json").Output()
	var st space.Status
	if jerr := json.Unmarshal(out, &st); jerr != nil {
		return fmt.Sprintf("status: %v %v", err, jerr)
	}
	for _, sp := range st.Spaces {
		for _, s := range sp.Streams {
			current := s.Leader == "node1" || slices.ContainsFunc(s.Followers, func(p space.Peer) bool {
				return p.Name == "node1" && p.Current && !p.Offline
			})
			if !current {
				return fmt.Sprintf("stream %+v", s)
			}
		}
	}
	if len(st.Spaces) == 0 {
		return "no space yet"
	}
	return ""
}

// mintRefusedWithoutKeyStore checks that a mint on a member's data directory fails naming node
// 1, the key-store node.
func mintRefusedWithoutKeyStore(t *testing.T, b bins, dir string) {
	t.Helper()
	out, err := exec.Command(b.cotal, "auth", "mint", "--dir", dir, "--name", "late", "--out",
		filepath.Join(t.TempDir(), "late.creds")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "node node1 holds it") {
		t.Errorf("a mint on node 2 while node 1 is down: %v\n%s", err, out)
	}
}

// String renders the figures for the table.
func (f *backstopFigures) String() string {
	return joinNotes(
		fmt.Sprintf("acked through the survivors during each outage %v", f.during),
		fmt.Sprintf("kill to %d publishes acked through the survivors ", resumedAfter)+durations(f.stalls),
		"kill to a survivor running the backstop "+durations(f.failovers),
		"offline member through node 2 to every durable copy owed "+durations(f.survivorCopies),
		"node 1 down (kill to join link) "+durations(f.downs),
		"restart to every stream current on node 1 "+durations(f.rejoins),
		"member back through node 1 to every durable copy owed "+durations(f.node1Copies),
		"mint on a member while node 1 is down: refused, naming node 1")
}

// warnings are the last lines of the nodes' logs at warning level or above, or about the
// backstop, for failure messages.
func warnings(nodes ...*meshProc) string {
	var out []string
	for _, n := range nodes {
		for _, line := range strings.Split(n.out.String(), "\n") {
			if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") || strings.Contains(line, "backstop") {
				out = append(out, line)
			}
		}
	}
	if len(out) > 40 {
		out = out[len(out)-40:]
	}
	return strings.Join(out, "\n")
}
