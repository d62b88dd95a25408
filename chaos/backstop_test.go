package chaos_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cotal-go/cotal/chaos"
	"github.com/cotal-go/cotal/internal/await"
)

// What a node logs when it takes a space's backstop lease, and when it stops the backstop.
const (
	backstopTakenLine   = "this node runs the space's backstop"
	backstopStoppedLine = "this node stopped running the space's backstop"
)

// TestTheBackstopNodeKilledUnderLoadLosesNothing is the kill -9 of the node that holds the key
// store and runs the durable backstop: three `cotal up` processes (sync always, R3 streams;
// nodes 2 and 3 hold the cluster backstop file), publishers sending numbered DMs and
// durable-channel posts through nodes 2 and 3, receivers connected through nodes 2 and 3
// throughout and a third, r3, through node 1. Once node 1 runs the backstop, r3 leaves
// (SIGTERM) and node 1 is killed with SIGKILL. While it is down:
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
// the drain bounds (tier.drain, 150 s) exceed one ack wait. Node 1 is killed once: restarted,
// it no longer runs the backstop, so a second kill would be a member's.
func TestTheBackstopNodeKilledUnderLoadLosesNothing(t *testing.T) {
	if !tier.backstopKill {
		t.Skip("the backstop moves after its 5 s lease and its unacknowledged entries after a 60 s ack wait; the long tier (make chaos) runs it")
	}
	t.Parallel()
	b := binaries(t)
	c := startClusterProcs(t, b)
	keys, n2, n3 := c.nodes[0], c.nodes[1], c.nodes[2]
	dir := c.dirs[0]
	s, r3, ids := ledgerReceivers(t, b, dir, n2, n3)
	r3.joinThrough(t, b, keys)
	pubs, journals := startClusterPublishers(t, b, dir, []*meshProc{n2, n3}, ids)
	audience := func(p chaos.Publish) chaos.Audience {
		if p.Kind == chaos.KindDM {
			return chaos.Audience{Receivers: []string{p.Target}}
		}
		return chaos.Audience{Receivers: ids}
	}
	await.True(t, time.Minute, "node 1, the key-store node, runs the backstop", func() bool { return backstopHolder(t, b, dir) == "node1" })

	publishPhase(t, tier.clusterOutage/2, journals...) // with all three nodes up
	r3.proc.stop(t)
	var f backstopFigures
	f.killNode1(t, journals, keys, n2, n3)
	owed, _ := chaos.FromJournal(readJournals(t, journals...))
	r3.joinThrough(t, b, n2)
	f.survivorCopies = catchUp(t, owed, r3, owedTo(audience, r3.cred.ID, chaos.KindChannel))
	mintRefusedWithoutKeyStore(t, b, c.dirs[1])
	time.Sleep(time.Until(f.killed.Add(tier.clusterOutage))) // pacing: the outage lasts at least tier.clusterOutage
	f.restartNode1(t, b, journals, keys)
	r3.proc.stop(t)
	owed, _ = chaos.FromJournal(readJournals(t, journals...))
	r3.joinThrough(t, b, keys)
	f.node1Copies = catchUp(t, owed, r3, owedTo(audience, r3.cred.ID, chaos.KindChannel))
	if strings.Contains(keys.out.String()[f.restartedAt:], backstopTakenLine) {
		t.Error("restarted node 1 took the backstop lease while a survivor held it")
	}

	publishPhase(t, tier.clusterOutage/2, journals...) // after the restart too
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
	record(t, fmt.Sprintf("3-node cluster, key-store and backstop node kill -9, ≥%v outage", tier.clusterOutage),
		joinNotes(deliveryFigures(d), f.String(), fmt.Sprintf("drained %v after publishing stopped", drainTime.Round(time.Millisecond))))
	if err := d.Err(); err != nil {
		t.Errorf("after node 1 was killed: %v", err)
	}
	if f.during == 0 {
		t.Error("the survivors acknowledged no publish while node 1 was down")
	}
}

// backstopFigures are what the backstop-kill test measures.
type backstopFigures struct {
	killed      time.Time
	restartedAt int // length of node 1's output when its second incarnation started
	ackedAtKill int // publishes acknowledged when node 1 was killed

	during         int           // publishes acknowledged through the survivors while node 1 was down
	stall          time.Duration // kill to resumedAfter publishes acknowledged
	takeover       time.Duration // kill to a survivor taking the lease
	failover       time.Duration // kill to that survivor running the backstop
	survivorCopies time.Duration // r3 through node 2 to every channel copy owed
	down           time.Duration // kill to node 1's join link again
	rejoin         time.Duration // node 1's restart to every stream current on it
	node1Copies    time.Duration // r3 back through node 1 to every channel copy owed
}

// killNode1 kills node 1 and waits until the survivors acknowledge publishes again and one of
// them runs the backstop.
func (f *backstopFigures) killNode1(t *testing.T, journals []string, keys *meshProc, survivors ...*meshProc) {
	t.Helper()
	f.ackedAtKill = ackedCount(t, journals...)
	logged := make([]int, len(survivors)) // what each survivor had logged before the kill
	for i, s := range survivors {
		logged[i] = len(s.out.String())
	}
	keys.kill()
	f.killed = time.Now()
	var took string
	await.Check(t, tier.drain, await.Interval, func() error {
		if f.stall == 0 && ackedCount(t, journals...) >= f.ackedAtKill+resumedAfter {
			f.stall = time.Since(f.killed)
		}
		for i, s := range survivors {
			if line := lineWith(s.out.String()[logged[i]:], backstopTakenLine); f.failover == 0 && line != "" {
				f.failover, took = time.Since(f.killed), line
			}
		}
		if f.stall == 0 || f.failover == 0 {
			return fmt.Errorf("after node 1 died: %d publishes acknowledged (want %d), backstop taken over: %v; the nodes' warnings:\n%s",
				ackedCount(t, journals...)-f.ackedAtKill, resumedAfter, f.failover > 0, warnings(append(survivors, keys)...))
		}
		return nil
	})
	f.takeover = f.failover
	if g := startedIn.FindStringSubmatch(took); g != nil {
		if d, err := time.ParseDuration(g[1]); err == nil {
			f.takeover -= d
		}
	}
}

// startedIn is how long a node took to start the backstop after taking its lease, in its log
// line.
var startedIn = regexp.MustCompile(`started_in=(\S+)`)

// restartNode1 starts node 1 again on its data directory and waits until it holds a current
// copy of every stream of space main.
func (f *backstopFigures) restartNode1(t *testing.T, b bins, journals []string, keys *meshProc) {
	t.Helper()
	f.during = ackedCount(t, journals...) - f.ackedAtKill
	f.restartedAt = len(keys.out.String())
	keys.start()
	restarted := time.Now()
	f.down = restarted.Sub(f.killed)
	var last string
	if !await.Until(tier.drain, func() bool {
		last = node1Lag(t, b, keys.dir)
		return last == ""
	}) {
		t.Errorf("restarted node 1 did not catch up within %v: %s", tier.drain, last)
	}
	f.rejoin = time.Since(restarted)
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
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	return joinNotes(
		fmt.Sprintf("acked through the survivors while node 1 was down %d", f.during),
		fmt.Sprintf("kill to %d publishes acked through the survivors %v", resumedAfter, ms(f.stall)),
		fmt.Sprintf("kill to a survivor taking the lease %v, to it running the backstop %v", ms(f.takeover), ms(f.failover)),
		fmt.Sprintf("offline member through node 2 to every durable copy owed %v", ms(f.survivorCopies)),
		fmt.Sprintf("node 1 down (kill to join link) %v", ms(f.down)),
		fmt.Sprintf("restart to every stream current on node 1 %v", ms(f.rejoin)),
		fmt.Sprintf("member back through node 1 to every durable copy owed %v", ms(f.node1Copies)),
		"mint on a member while node 1 is down: refused, naming node 1; restarted node 1 left the lease to the survivor")
}
