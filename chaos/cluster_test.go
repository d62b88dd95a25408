package chaos_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/cotal-go/cotal/chaos"
	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
)

// TestAClusterMemberKilledUnderLoadLosesNothing is the cluster's member-kill test for a node
// that does not hold the key store (backstop failover is not built): three `cotal up` processes
// (sync always, R3 streams), publishers sending numbered DMs and durable-channel posts through
// nodes 1 and 3, receivers on nodes 1 and 3 and a third through node 2. Node 2 is killed with
// SIGKILL, publishing goes on through the survivors for the outage, node 2 restarts on its data
// directory and port, and the third receiver reconnects through it. SPEC §4, §8: every
// acknowledged publish surfaces at every receiver it owes, once per receiver incarnation, the
// survivors acknowledge publishes throughout the outage, and the restarted node serves
// everything its receiver missed.
//
// The third receiver leaves (SIGTERM) just before each kill, so that the kill cuts no
// connection holding pulled copies (the receiver-crash test covers those). Even so, the few
// DMs its Endpoint had pulled but not surfaced when it closed come back only after dm_<id>'s
// 60 s ack wait, which is why channel and DM catch-up are timed apart.
func TestAClusterMemberKilledUnderLoadLosesNothing(t *testing.T) {
	if tier.clusterKills == 0 {
		t.Skip("a member kill waits out a RAFT election and may wait out a 60 s ack wait; the long tier (make chaos) runs it")
	}
	t.Parallel()
	b := binaries(t)
	c := startClusterProcs(t, b)
	keys, victim, other := c.nodes[0], c.nodes[1], c.nodes[2]
	dir := c.dirs[0]
	s, r3, ids := ledgerReceivers(t, b, dir, keys, other)
	startR3 := func() string { return r3.joinThrough(t, b, victim) }
	startR3()
	t.Logf("receivers: r1 %s on node 1, r2 %s on node 3, r3 %s on node 2", ids[0], ids[1], ids[2])

	pubs, journals := startClusterPublishers(t, b, dir, []*meshProc{keys, other}, ids)
	audience := func(p chaos.Publish) chaos.Audience {
		if p.Kind == chaos.KindDM {
			return chaos.Audience{Receivers: []string{p.Target}}
		}
		return chaos.Audience{Receivers: ids}
	}
	surfacings := func() []chaos.Surfacing {
		_, r3s := chaos.FromJournal(readJournals(t, r3.journal))
		return append(s.all(), r3s...)
	}

	var during []int
	var channelCatchUps, dmCatchUps, stalls, downs []time.Duration
	var rejoins []string // join states short of durable when r3 came back
	for range tier.clusterKills {
		publishPhase(t, tier.clusterOutage/2, journals...) // with all three nodes up
		r3.proc.stop(t)
		before := ackedCount(t, journals...)
		victim.kill()
		killed := time.Now()
		// The outage lasts tier.clusterOutage, and at least until the survivors acknowledge
		// publishes again: a stream whose leader was on node 2 takes a RAFT election first.
		var stall time.Duration
		await.Check(t, tier.drain, await.Interval, func() error {
			if ackedCount(t, journals...) < before+resumedAfter {
				return fmt.Errorf("the survivors acknowledged fewer than %d publishes after node 2 died", resumedAfter)
			}
			stall = time.Since(killed)
			return nil
		})
		time.Sleep(time.Until(killed.Add(tier.clusterOutage))) // pacing: the outage lasts at least tier.clusterOutage
		during = append(during, ackedCount(t, journals...)-before)
		stalls = append(stalls, stall)
		victim.start()
		restarted := time.Now()
		downs = append(downs, restarted.Sub(killed))
		// What was acknowledged up to the restart, the third receiver must read through node 2.
		owed, _ := chaos.FromJournal(readJournals(t, journals...))
		if st := startR3(); st != string(endpoint.JoinedDurable) {
			rejoins = append(rejoins, st)
		}
		// r3's channel copies come from its dlv_<id>, its DMs from its dm_<id>; timed apart,
		// since a DM its previous incarnation had pulled when it closed comes back only
		// after the consumer's 60 s ack wait.
		var channelsAt, dmsAt time.Duration
		caught := await.Until(tier.drain, func() bool {
			_, r3s := chaos.FromJournal(readJournals(t, r3.journal))
			if channelsAt == 0 && chaos.Check(owed, r3s, owedTo(audience, r3.cred.ID, chaos.KindChannel)).Lost == 0 {
				channelsAt = time.Since(restarted)
			}
			if dmsAt == 0 && chaos.Check(owed, r3s, owedTo(audience, r3.cred.ID, chaos.KindDM)).Lost == 0 {
				dmsAt = time.Since(restarted)
			}
			return channelsAt > 0 && dmsAt > 0
		})
		channelCatchUps, dmCatchUps = append(channelCatchUps, channelsAt), append(dmCatchUps, dmsAt)
		if !caught {
			t.Errorf("the receiver through restarted node 2 did not read what it was owed within %v", tier.drain)
		}
	}
	publishPhase(t, tier.clusterOutage/2, journals...) // after the last restart too
	for _, p := range pubs {
		p.proc.stop(t)
		if p.proc.code != 0 {
			t.Fatalf("publisher %s exited %d:\n%s", p.proc.name, p.proc.code, tail(p.proc.out.String(), 3000))
		}
	}
	published, _ := chaos.FromJournal(readJournals(t, journals...))
	begin := time.Now()
	await.Until(tier.drain, func() bool { return chaos.Check(published, surfacings(), audience).Lost == 0 })
	drainTime := time.Since(begin)
	f := chaos.Check(published, surfacings(), audience)
	record(t, fmt.Sprintf("3-node cluster, member (not key store) kill -9 ×%d, %v outage each", tier.clusterKills, tier.clusterOutage),
		joinNotes(deliveryFigures(f),
			fmt.Sprintf("acked through the survivors during each outage %v", during),
			fmt.Sprintf("kill to %d publishes acked through the survivors ", resumedAfter)+durations(stalls),
			"member down (kill to join link) "+durations(downs),
			"restart to its receiver read every durable channel copy owed "+durations(channelCatchUps),
			"every DM owed "+durations(dmCatchUps),
			fmt.Sprintf("rejoins through node 2 not durable at connect %d of %d", len(rejoins), tier.clusterKills),
			fmt.Sprintf("drained %v after publishing stopped", drainTime.Round(time.Millisecond))))
	if err := f.Err(); err != nil {
		t.Errorf("after %d member kills: %v", tier.clusterKills, err)
	}
	for i, n := range during {
		if n == 0 {
			t.Errorf("outage %d: the survivors acknowledged no publish", i+1)
		}
	}
}
