package chaos_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cotal-go/cotal/chaos"
	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
)

// TestAPartitionedNodeAcknowledgesNothingAndLosesNothing is the cluster's partition test, after
// Jepsen's analysis of NATS 2.12.1: three `cotal up` processes, each in its own network
// namespace, with a publisher and a receiver connected through each node. Node 1 (key store,
// backstop holder) is cut off from the other two while the test still reaches all three, so its
// clients stay connected to a node in a minority.
//
//   - the majority side acknowledges publishes again after at most a RAFT election, and one of
//     its nodes takes the backstop lease once node 1 can no longer renew it;
//   - no publish sent through node 1 after the cut is acknowledged before the heal: an
//     acknowledgement from a minority would be a write the majority may never have seen;
//   - after the heal node 1 catches up, and every acknowledged publish surfaces at every
//     receiver it owes, once per receiver (SPEC §4), the minority's receiver included.
//
// A copy in flight to node 1's receiver when the cut came may wait out a consumer's 60 s ack
// wait after the heal, which the drain bound (tier.drain) covers.
func TestAPartitionedNodeAcknowledgesNothingAndLosesNothing(t *testing.T) {
	if tier.partitionFor == 0 {
		t.Skip("a partition waits out RAFT elections, the lease and perhaps a 60 s ack wait; the long tier (make chaos) runs it")
	}
	lab := newNetLab(t, 3)
	t.Parallel()
	b := binaries(t)
	c := startClusterAt(t, b, clusterPlace{hosts: lab.hosts, wrap: lab.exec})
	dir := c.dirs[0]
	s := newSink()
	var ids []string
	for i, node := range c.nodes {
		r := mintCLI(t, b, dir, fmt.Sprintf("r%d", i+1), "--subscribe", "ledger")
		ep := connectTCP(t, node.Link(), r, s.handler(r.ID, r.Name), func(o *endpoint.Options) { o.Channels = []string{"ledger"} })
		joinedDurable(t, ep, "ledger")
		ids = append(ids, r.ID)
	}
	// Every publish gives up after 2 s, so that the publisher through node 1 tries many times
	// while node 1 is cut off. A publish that timed out has an unknown outcome: one the cut
	// held in a TCP buffer may still be stored after the heal.
	pubs, journals := startClusterPublishers(t, b, dir, c.nodes, ids, "-publish-timeout", "2s")
	minority := pubs[0] // publishes through node 1
	audience := func(p chaos.Publish) chaos.Audience {
		if p.Kind == chaos.KindDM {
			return chaos.Audience{Receivers: []string{p.Target}}
		}
		return chaos.Audience{Receivers: ids}
	}

	await.True(t, time.Minute, "node 1, the key-store node, runs the backstop", func() bool { return backstopHolder(t, b, dir) == "node1" })
	time.Sleep(tier.partitionFor / 3) // pacing: publishing with the cluster whole
	p := partitionFigures{}
	p.cut(t, lab, journals, minority.journal, c)
	lab.heal()
	p.healed = time.Now()
	var last string
	if !await.Until(tier.drain, func() bool { last = node1Lag(t, b, dir); return last == "" }) {
		t.Errorf("node 1 did not catch up within %v of the heal: %s", tier.drain, last)
	}
	p.caughtUp = time.Since(p.healed)
	time.Sleep(tier.partitionFor / 3) // pacing: publishing after the heal too
	for _, pub := range pubs {
		pub.proc.stop(t)
		switch {
		case pub.proc.code == 0:
		case pub == minority || onlyFinalPresenceFailed(pub.proc.out.String()):
			// A Close after the heal may meet the elections that follow it (a route the cut
			// left stalled is closed up to its 10 s write deadline later) and find no
			// responder for its final offline presence; peers see the instance offline
			// by its TTL instead (SPEC §6). Its journal, which the checker reads, is whole.
			t.Logf("publisher %s exited %d:\n%s", pub.proc.name, pub.proc.code, tail(pub.proc.out.String(), 1000))
		default:
			t.Errorf("publisher %s exited %d:\n%s", pub.proc.name, pub.proc.code, tail(pub.proc.out.String(), 3000))
		}
	}
	published, _ := chaos.FromJournal(readJournals(t, journals...))
	begin := time.Now()
	await.Until(tier.drain, func() bool { return chaos.Check(published, s.all(), audience).Lost == 0 })
	drainTime := time.Since(begin)
	f := chaos.Check(published, s.all(), audience)
	if t.Failed() {
		for i, n := range c.nodes {
			t.Logf("node %d output:\n%s", i+1, tail(n.out.String(), 6000))
		}
	}
	record(t, fmt.Sprintf("3-node cluster, node 1 (key store, backstop) partitioned from the other two for %v", tier.partitionFor),
		joinNotes(deliveryFigures(f), p.String(), fmt.Sprintf("drained %v after publishing stopped", drainTime.Round(time.Millisecond))))
	if err := f.Err(); err != nil {
		t.Errorf("after the partition healed: %v", err)
	}
	if p.majorityAcked == 0 {
		t.Error("the majority acknowledged no publish during the partition")
	}
	if p.minorityAcked > 0 {
		t.Errorf("node 1, cut off in a minority, acknowledged %d publishes sent after the cut, e.g. %s", p.minorityAcked, p.minorityExample)
	}
}

// partitionFigures are what the partition test measures.
type partitionFigures struct {
	healed time.Time

	stall, failover, stopped time.Duration // cut to: majority acks again, a majority node runs the backstop, node 1 stops it
	majorityAcked            int           // acknowledged through nodes 2 and 3 during the partition
	minorityAttempts         int           // publishes sent through node 1 after the cut, before the heal
	minorityAcked            int           // of those, acknowledged before the heal: must be 0
	minorityExample          string
	minorityErrors           map[string]int // of those, failed, by error
	caughtUp                 time.Duration  // heal to node 1 current on every stream
}

// cut isolates node 1 for tier.partitionFor, measuring the majority's recovery and where the
// backstop runs.
func (p *partitionFigures) cut(t *testing.T, lab *netLab, journals []string, minorityJournal string, c clusterProcs) {
	t.Helper()
	majority := journals[1:]
	logged := func(n *meshProc, line string) int { return strings.Count(n.out.String(), line) }
	takenBefore := logged(c.nodes[1], backstopTakenLine) + logged(c.nodes[2], backstopTakenLine)
	stoppedBefore := logged(c.nodes[0], backstopStoppedLine)
	before := ackedCount(t, majority...)
	lab.isolate(0)
	cutAt := time.Now()
	p.minorityErrors = map[string]int{}
	mark := len(readJournals(t, minorityJournal))
	for time.Since(cutAt) < tier.partitionFor {
		since := time.Since(cutAt)
		if p.stall == 0 && ackedCount(t, majority...) >= before+resumedAfter {
			p.stall = since
		}
		if p.failover == 0 && logged(c.nodes[1], backstopTakenLine)+logged(c.nodes[2], backstopTakenLine) > takenBefore {
			p.failover = since
		}
		if p.stopped == 0 && logged(c.nodes[0], backstopStoppedLine) > stoppedBefore {
			p.stopped = since
		}
		time.Sleep(20 * time.Millisecond) // pacing: polling journals and logs for the partition's length
	}
	p.majorityAcked = ackedCount(t, majority...) - before
	// Read before the heal: an acknowledgement written from here on may be the majority's.
	p.minority(readJournals(t, minorityJournal), mark)
	if p.stall == 0 || p.failover == 0 {
		t.Errorf("%v into the partition: majority acks again after %v, backstop taken over after %v (0: not yet)",
			tier.partitionFor, p.stall, p.failover)
	}
}

// minority classifies the minority publisher's attempts journaled after entry mark.
func (p *partitionFigures) minority(entries []chaos.Entry, mark int) {
	var after []string
	for i, e := range entries {
		switch {
		case e.Event == chaos.EventAttempt && i >= mark:
			after = append(after, e.ID)
		case !slices.Contains(after, e.ID):
		case e.Event == chaos.EventAcked:
			p.minorityAcked++
			if p.minorityExample == "" {
				p.minorityExample = fmt.Sprintf("%s %s (seq %d)", e.Kind, e.ID, e.Seq)
			}
		case e.Event == chaos.EventFailed:
			p.minorityErrors[shortError(e.Err)]++
		}
	}
	p.minorityAttempts = len(after)
}

// shortError keeps an error's last clause, which names the cause.
func shortError(err string) string {
	if i := strings.LastIndex(err, ": "); i >= 0 {
		return err[i+2:]
	}
	return err
}

// String renders the figures for the table.
func (p *partitionFigures) String() string {
	return joinNotes(
		fmt.Sprintf("cut to %d publishes acked by the majority %v", resumedAfter, p.stall.Round(time.Millisecond)),
		fmt.Sprintf("acked by the majority during the partition %d", p.majorityAcked),
		fmt.Sprintf("cut to node 1 stopping its backstop %v, to a majority node running it %v", p.stopped.Round(time.Millisecond), p.failover.Round(time.Millisecond)),
		fmt.Sprintf("**publishes sent through node 1 after the cut %d, acknowledged before the heal %d**, failed by cause %v", p.minorityAttempts, p.minorityAcked, p.minorityErrors),
		fmt.Sprintf("heal to node 1 current on every stream %v", p.caughtUp.Round(time.Millisecond)))
}
