package chaos_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cotal-go/cotal/chaos"
	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
)

// publisher is one publishing identity whose agentproc processes come and go: each
// incarnation publishes under its own id prefix into the identity's journal.
type publisher struct {
	cred        minted
	journal     string
	args        []string
	incarnation int
	proc        *agentProc
}

// startPublisher starts the next incarnation of p, publishing n messages.
func (p *publisher) start(t *testing.T, b bins, link string, n int) {
	t.Helper()
	p.incarnation++
	inc := fmt.Sprintf("%s.%d", p.cred.Name, p.incarnation)
	args := append([]string{"-link", link, "-creds", p.cred.Creds, "-journal", p.journal,
		"-incarnation", inc, "-prefix", inc, "-publish", strconv.Itoa(n), "-gap", "2ms"}, p.args...)
	p.proc = startAgent(t, b, inc, args...)
}

// untilStopped is a publish count no run reaches: the publisher runs until SIGTERM.
const untilStopped = 1 << 30

// readJournals reads and concatenates journals.
func readJournals(t *testing.T, paths ...string) []chaos.Entry {
	t.Helper()
	var all []chaos.Entry
	for _, p := range paths {
		e, err := chaos.ReadJournal(p)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, e...)
	}
	return all
}

// ledgerAudience is who must surface a publish of the crash tests: a DM its target, an
// anycast one holder of role worker, a ledger message every member.
func ledgerAudience(receivers ...string) func(chaos.Publish) chaos.Audience {
	return func(p chaos.Publish) chaos.Audience {
		switch p.Kind {
		case chaos.KindDM:
			return chaos.Audience{Receivers: []string{p.Target}}
		case chaos.KindAnycast:
			return chaos.Audience{Receivers: receivers, One: true}
		default:
			return chaos.Audience{Receivers: receivers}
		}
	}
}

// TestAcknowledgedPublishesSurviveMeshCrashes kills the mesh (`cotal up`, sync always) with
// SIGKILL at random moments while publisher processes send numbered DMs, anycasts and
// durable-channel messages, kills publishers between publish and acknowledgement, restarts
// everything on the same directory and port, and drains. SPEC §4 and §8: every acknowledged
// publish surfaces at every receiver it owes, once per receiver, and nothing else surfaces.
func TestAcknowledgedPublishesSurviveMeshCrashes(t *testing.T) {
	t.Parallel()
	b := binaries(t)
	rng := newRand(t)
	dir := t.TempDir()
	r1 := mintCLI(t, b, dir, "r1", "--role", "worker", "--subscribe", "ledger")
	r2 := mintCLI(t, b, dir, "r2", "--role", "worker", "--subscribe", "ledger")
	pubs := make([]*publisher, tier.publishers)
	for i := range pubs {
		cred := mintCLI(t, b, dir, fmt.Sprintf("p%d", i), "--allow-publish", "ledger")
		pubs[i] = &publisher{cred: cred, journal: filepath.Join(dir, cred.Name+".jsonl"),
			args: []string{"-dm", r1.ID + "," + r2.ID, "-anycast", "worker", "-channel", "ledger"}}
	}
	mesh := startMesh(t, b, dir)
	s := newSink()
	for _, r := range []minted{r1, r2} {
		ep := connectTCP(t, mesh.Link(), r, s.handler(r.ID, r.Name), func(o *endpoint.Options) {
			o.Channels = []string{"ledger"}
		})
		joinedDurable(t, ep, "ledger")
	}
	for _, p := range pubs {
		p.start(t, b, mesh.Link(), untilStopped)
	}

	pubKills := crashSchedule(t, rng, mesh, func() {
		p := pubs[rng.IntN(len(pubs))]
		p.proc.kill()
		p.start(t, b, mesh.Link(), untilStopped)
	})
	lastRestart := time.Now()
	time.Sleep(between(rng, tier.killGap[0], tier.killGap[1])) // publishing after the last restart too
	for _, p := range pubs {
		p.proc.stop(t)
		if p.proc.code != 0 {
			t.Fatalf("publisher %s exited %d:\n%s", p.proc.name, p.proc.code, tail(p.proc.out.String(), 3000))
		}
	}
	var journals []string
	for _, p := range pubs {
		journals = append(journals, p.journal)
	}
	published, _ := chaos.FromJournal(readJournals(t, journals...))
	audience := ledgerAudience(r1.ID, r2.ID)
	drained := await.Until(tier.drain, func() bool { return chaos.Check(published, s.all(), audience).Lost == 0 })
	drainTime := time.Since(lastRestart)
	f := chaos.Check(published, s.all(), audience)
	record(t, fmt.Sprintf("mesh kill -9 ×%d, publisher kill -9 ×%d", tier.meshKills, pubKills),
		joinNotes(deliveryFigures(f), "mesh down per kill (kill to join link) "+durations(mesh.restarts),
			fmt.Sprintf("drained %v after the last restart", drainTime.Round(time.Millisecond))))
	if err := f.Err(); err != nil {
		t.Errorf("after %d mesh kills (drained: %v): %v", tier.meshKills, drained, err)
	}
	if f.Acked == 0 {
		t.Error("no publish was acknowledged: the run proved nothing")
	}
}

// crashSchedule kills and restarts the mesh tier.meshKills times at random moments. Before
// some of the kills it calls killPublisher, tier.publisherKills times in all, and returns how
// often it did.
func crashSchedule(t *testing.T, rng *rand.Rand, mesh *meshProc, killPublisher func()) int {
	t.Helper()
	pubKills := 0
	for k := range tier.meshKills {
		time.Sleep(between(rng, tier.killGap[0], tier.killGap[1])) // a random moment, not a wait
		left := tier.meshKills - k
		if pubKills < tier.publisherKills && rng.IntN(left) < tier.publisherKills-pubKills {
			killPublisher()
			pubKills++
		}
		mesh.restart()
	}
	return pubKills
}

// TestReceiverCrashesBetweenSurfacingAndAckLoseNothing runs the receivers as processes that
// exit inside their Handler, after surfacing a message and before its acknowledgement, and
// restarts them. SPEC §4, §8: a copy is acknowledged only after it was surfaced, so the crash
// redelivers it (to the next incarnation or, for an anycast, to another holder) and nothing
// acknowledged by JetStream is lost.
func TestReceiverCrashesBetweenSurfacingAndAckLoseNothing(t *testing.T) {
	if tier.receiverCrashes == 0 {
		t.Skip("each receiver crash waits out the consumers' 60 s ack wait; the long tier (make chaos) runs it")
	}
	t.Parallel()
	b := binaries(t)
	rng := newRand(t)
	dir := t.TempDir()
	recvs := []*receiverProc{
		{cred: mintCLI(t, b, dir, "ra", "--role", "worker", "--subscribe", "ledger")},
		{cred: mintCLI(t, b, dir, "rb", "--role", "worker", "--subscribe", "ledger")},
	}
	pub := &publisher{cred: mintCLI(t, b, dir, "p", "--allow-publish", "ledger"), journal: filepath.Join(dir, "p.jsonl"),
		args: []string{"-dm", recvs[0].cred.ID + "," + recvs[1].cred.ID, "-anycast", "worker", "-channel", "ledger"}}
	mesh := startMesh(t, b, dir)
	budget := tier.receiverCrashes / len(recvs)
	for _, r := range recvs {
		r.journal = filepath.Join(dir, r.cred.Name+".jsonl")
		r.start(t, b, mesh.Link(), rng, budget)
	}
	await.True(t, time.Minute, "the receivers joined ledger durable", func() bool {
		return joinedAll(t, recvs...)
	})
	pub.start(t, b, mesh.Link(), tier.perPublisher)
	crashes, crashed := crashWhilePublishing(t, b, mesh.Link(), rng, pub, recvs, budget)
	if code := pub.proc.wait(t, time.Minute); code != 0 {
		t.Fatalf("publisher exited %d:\n%s", code, tail(pub.proc.out.String(), 3000))
	}
	published, _ := chaos.FromJournal(readJournals(t, pub.journal))
	audience := ledgerAudience(recvs[0].cred.ID, recvs[1].cred.ID)
	surfacings := func() []chaos.Surfacing {
		_, s := chaos.FromJournal(readJournals(t, recvs[0].journal, recvs[1].journal))
		return s
	}
	begin := time.Now()
	await.Until(tier.drain, func() bool { return chaos.Check(published, surfacings(), audience).Lost == 0 })
	drainTime := time.Since(begin)
	// The copy each crashed incarnation was handling was never acknowledged: it must come
	// again, to a later incarnation or another holder, once the consumer's ack wait ran out.
	entries := readJournals(t, recvs[0].journal, recvs[1].journal)
	pending := crashCopies(entries, crashed)
	await.Until(tier.drain, func() bool {
		return len(unredelivered(readJournals(t, recvs[0].journal, recvs[1].journal), pending)) == 0
	})
	redeliverTime := time.Since(begin)
	missing := unredelivered(readJournals(t, recvs[0].journal, recvs[1].journal), pending)
	for _, r := range recvs {
		r.proc.stop(t)
	}
	f := chaos.Check(published, surfacings(), audience)
	record(t, fmt.Sprintf("receiver exits inside the Handler ×%d", crashes), joinNotes(deliveryFigures(f),
		fmt.Sprintf("drained %v after the last publish", drainTime.Round(time.Millisecond)),
		fmt.Sprintf("**copies being handled at a crash and never redelivered: %d of %d** (all redelivered within %v: one ack wait)",
			len(missing), len(pending), redeliverTime.Round(time.Millisecond))))
	if err := f.Err(); err != nil {
		t.Error(err)
	}
	if len(pending) == 0 {
		t.Error("no receiver crashed inside its Handler: the run proved nothing")
	}
	for id, inc := range missing {
		t.Errorf("%s crashed handling %s, which was never surfaced again", inc, id)
	}
}

// crashWhilePublishing restarts every receiver that crashed itself, until the publisher is
// done and the crash budget is spent (or tier.drain after the publisher is done). It returns
// the crashes and the names of the crashed incarnations.
func crashWhilePublishing(t *testing.T, b bins, link string, rng *rand.Rand, pub *publisher, recvs []*receiverProc, budget int) (int, []string) {
	t.Helper()
	crashes, crashed := 0, []string(nil)
	var finished time.Time // when the publisher finished; the crash budget may outlast it
	for {
		if pub.proc.done() {
			if finished.IsZero() {
				finished = time.Now()
			}
			if crashes >= budget*len(recvs) || time.Since(finished) > tier.drain {
				return crashes, crashed
			}
		}
		for _, r := range recvs {
			if r.proc.done() {
				if r.proc.code != 3 {
					t.Fatalf("receiver %s exited %d:\n%s", r.proc.name, r.proc.code, tail(r.proc.out.String(), 3000))
				}
				crashes++
				crashed = append(crashed, r.proc.name)
				r.start(t, b, link, rng, budget)
			}
		}
		time.Sleep(20 * time.Millisecond) // polling the processes' exit
	}
}

// crashCopies maps the id each crashed incarnation surfaced last, the copy its Handler was
// handling when the process exited, to that incarnation.
func crashCopies(entries []chaos.Entry, crashed []string) map[string]string {
	last := map[string]string{}
	for _, e := range entries {
		if e.Event == chaos.EventSurfaced && slices.Contains(crashed, e.Incarnation) {
			last[e.Incarnation] = e.ID
		}
	}
	out := map[string]string{}
	for inc, id := range last {
		out[id] = inc
	}
	return out
}

// unredelivered returns the crash copies no other incarnation has surfaced yet.
func unredelivered(entries []chaos.Entry, pending map[string]string) map[string]string {
	missing := maps.Clone(pending)
	for _, e := range entries {
		if inc, ok := missing[e.ID]; ok && e.Event == chaos.EventSurfaced && e.Incarnation != inc {
			delete(missing, e.ID)
		}
	}
	return missing
}

// receiverProc is one receiving identity whose agentproc processes crash and restart.
type receiverProc struct {
	cred        minted
	journal     string
	incarnation int
	crashes     int
	proc        *agentProc
}

// start runs the next incarnation; until the receiver used its crash budget, the incarnation
// exits inside its Handler after a few surfacings.
func (r *receiverProc) start(t *testing.T, b bins, link string, rng *rand.Rand, budget int) {
	t.Helper()
	r.incarnation++
	inc := fmt.Sprintf("%s.%d", r.cred.Name, r.incarnation)
	crashAfter := 0
	if r.incarnation <= budget {
		crashAfter = 2 + rng.IntN(20)
	}
	r.proc = startAgent(t, b, inc, "-link", link, "-creds", r.cred.Creds, "-journal", r.journal,
		"-incarnation", inc, "-join", "ledger", "-crash-after", strconv.Itoa(crashAfter))
}

// joinedAll reports whether the current incarnation of every receiver journaled a durable
// join of ledger.
func joinedAll(t *testing.T, rs ...*receiverProc) bool {
	t.Helper()
	for _, r := range rs {
		inc := fmt.Sprintf("%s.%d", r.cred.Name, r.incarnation)
		if !slices.ContainsFunc(readJournals(t, r.journal), func(e chaos.Entry) bool {
			return e.Event == chaos.EventJoined && e.Incarnation == inc && e.Kind == string(endpoint.JoinedDurable)
		}) {
			return false
		}
	}
	return true
}
