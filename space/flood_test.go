package space_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

// TestADMFlooderIsCutOff: mallory floods DMs to made-up ids as fast as her connection
// carries them and reconnects each time she is cut off, while alice DMs a real agent. The
// check between passes takes the store back and closes mallory's connections, again after
// each reconnect, naming her; alice's DMs keep being stored and none is lost.
func TestADMFlooderIsCutOff(t *testing.T) {
	t.Parallel()
	const streamBytes = 8 << 20
	m, logs := loggedMesh(t, func(o *space.Options) { o.HTTP, o.Limits.DMBytes = "127.0.0.1:0", streamBytes })
	g := provisioner.Grants{Subscribe: []string{"general"}}
	mallory, victim := mint(t, m, "mallory", provisioner.ProfileAgent, g), mint(t, m, "victim", provisioner.ProfileAgent, g)
	n := wire.NewNames("main")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	alice := mint(t, m, "alice", provisioner.ProfileAgent, g)
	a, v := newPeer(t, m, alice), newPeer(t, m, victim)

	cut, stop := floodAsFastAsItCarries(t, m, mallory, func(i int) string { return n.InstSubject(fmt.Sprintf("madeup%d", i), mallory.ID) })
	began := time.Now()

	// At least three seconds of flood, and on until mallory was cut off, came back and was cut
	// off again: how long that takes depends on how fast this machine lets her publish.
	sent, refused := 0, 0
	for i, end := 0, time.Now().Add(3*time.Second); (time.Now().Before(end) || cut.Load() < 2) && ctx.Err() == nil; i++ {
		if _, err := a.jetStream(t).Publish(ctx, n.InstSubject(victim.ID, alice.ID), []byte(fmt.Sprintf("dm %d", i))); err != nil {
			if !maximumBytes(err) {
				t.Fatalf("alice's DM %d: %v", i, a.explain(err))
			}
			refused++
			continue
		}
		sent++
	}
	stop()
	t.Logf("in %v of flood mallory was cut off %d times; %d of alice's %d DMs were stored, %d refused as the store was full",
		time.Since(began).Round(time.Millisecond), cut.Load(), sent, sent+refused, refused)
	if cut.Load() < 2 {
		t.Errorf("mallory was cut off %d times in %v of flood, want again after she reconnected", cut.Load(), time.Since(began))
	}

	// Once mallory stops, alice's DMs are stored again: the store is taken back.
	await.Check(t, 10*time.Second, 0, func() error {
		_, err := a.jetStream(t).Publish(ctx, n.InstSubject(victim.ID, alice.ID), []byte("after"))
		return a.explain(err)
	})
	sent++
	subject := n.InstSubject(victim.ID, alice.ID)
	if got := streamState(ctx, t, v, n.DMStream(), subject).State.Subjects[subject]; got != uint64(sent) {
		t.Errorf("the DM stream keeps %d of alice's DMs to the victim; %d were acknowledged", got, sent)
	}
	if want := "agent=mallory id=" + mallory.ID; !strings.Contains(logs.String(), want) {
		t.Errorf("the log does not name the flooder (%s):\n%.3000s", want, logs)
	}
	_, metrics := get(t, m.HTTPURL()+"/metrics")
	if v := metricValue(t, metrics, `cotal_flooders_closed_total{kind="dm",space="main"}`); v < 2 {
		t.Errorf("cotal_flooders_closed_total{kind=dm} = %v, want at least the 2 cuts mallory saw", v)
	}
}

// floodAsFastAsItCarries publishes 8 KiB messages as cred on subject(0), subject(1), … as
// fast as its connection carries them, reconnecting within 20 ms of each cut, until stop is
// called; cut counts the times its connection was closed.
func floodAsFastAsItCarries(t *testing.T, m *space.Mesh, cred *provisioner.Credential, subject func(i int) string) (cut *atomic.Int64, stop func()) {
	t.Helper()
	cut = new(atomic.Int64)
	back := make(chan struct{}, 1) // a reconnect since the flood last stalled
	nc := connect(t, m, cred, nats.ReconnectWait(20*time.Millisecond), nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(*nats.Conn, error) { cut.Add(1) }),
		nats.ReconnectHandler(func(*nats.Conn) {
			select {
			case back <- struct{}{}:
			default:
			}
		}),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	body := make([]byte, 8<<10)
	flooding, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-flooding:
				return
			default:
			}
			if err := nc.Publish(subject(i), body); err != nil {
				select { // reconnecting, with the reconnect buffer full: flood again once back
				case <-back:
				case <-flooding:
					return
				}
			}
		}
	}()
	return cut, func() {
		close(flooding)
		<-done
	}
}

// TestATaskFlooderKeepsOnlyItsShare: mallory floods 8 KiB tasks for a role that is held but
// whose worker is offline, as fast as her connection carries them, reconnecting each time she
// is cut off, while alice sends the same role a task every 5 ms. The check between passes
// deletes mallory's oldest tasks past a quarter of the store and closes her connections,
// naming her; alice's tasks keep being stored, each answered, and none is lost.
func TestATaskFlooderKeepsOnlyItsShare(t *testing.T) {
	t.Parallel()
	const streamBytes = 8 << 20
	m, logs := loggedMesh(t, func(o *space.Options) { o.HTTP, o.Limits.TaskBytes = "127.0.0.1:0", streamBytes })
	g := provisioner.Grants{Subscribe: []string{"general"}}
	mallory, alice := mint(t, m, "mallory", provisioner.ProfileAgent, g), mint(t, m, "alice", provisioner.ProfileAgent, g)
	mint(t, m, "worker", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}, Role: "builder"})
	n := wire.NewNames("main")
	a := newPeer(t, m, alice)

	cut, stop := floodAsFastAsItCarries(t, m, mallory, func(int) string { return n.SvcSubject("builder", mallory.ID) })

	// As in TestADMFlooderIsCutOff: three seconds, and on until mallory was cut off twice.
	sent, refused, slowest, began := 0, 0, time.Duration(0), time.Now()
	tick := time.NewTicker(5 * time.Millisecond)
	for end := began.Add(3 * time.Second); (time.Now().Before(end) || cut.Load() < 2) && time.Since(began) < time.Minute; <-tick.C {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		began := time.Now()
		_, err := a.jetStream(t).Publish(ctx, n.SvcSubject("builder", alice.ID), []byte(fmt.Sprintf("task %d", sent+refused)))
		cancel()
		slowest = max(slowest, time.Since(began))
		switch {
		case err == nil:
			sent++
		case maximumBytes(err):
			refused++
		default:
			t.Fatalf("alice's task %d, after %v: %v", sent+refused, time.Since(began), a.explain(err))
		}
	}
	tick.Stop()
	stop()
	t.Logf("in %v of flood mallory was cut off %d times; %d of alice's %d tasks were stored, %d refused as the store was full; slowest answer %v",
		time.Since(began).Round(time.Millisecond), cut.Load(), sent, sent+refused, refused, slowest)
	if cut.Load() < 2 {
		t.Errorf("mallory was cut off %d times in %v of flood, want again after she reconnected", cut.Load(), time.Since(began))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Once mallory stops, her tasks fit in her share and alice's are stored again.
	await.Check(t, 10*time.Second, 0, func() error {
		_, err := a.jetStream(t).Publish(ctx, n.SvcSubject("builder", alice.ID), []byte("after"))
		return a.explain(err)
	})
	sent++
	st := streamState(ctx, t, a, n.TaskStream(), n.Prefix()+".svc.builder.*").State
	if got := st.Subjects[n.SvcSubject("builder", alice.ID)]; got != uint64(sent) {
		t.Errorf("the task store keeps %d of alice's tasks; %d were acknowledged", got, sent)
	}
	// A store past half full is taken back to mallory's quarter at the next check; below
	// half, her tasks are left for the worker.
	await.Check(t, 10*time.Second, 0, func() error {
		st := streamState(ctx, t, a, n.TaskStream(), n.SvcSubject("builder", mallory.ID)).State
		if st.Bytes > streamBytes/2 {
			return fmt.Errorf("the task store holds %d of its %d bytes, %d tasks of mallory's", st.Bytes, streamBytes, st.Subjects[n.SvcSubject("builder", mallory.ID)])
		}
		return nil
	})
	if want := "agent=mallory id=" + mallory.ID; !strings.Contains(logs.String(), want) {
		t.Errorf("the log does not name the flooder (%s):\n%.3000s", want, logs)
	}
	_, metrics := get(t, m.HTTPURL()+"/metrics")
	if v := metricValue(t, metrics, `cotal_flooders_closed_total{kind="tasks",space="main"}`); v < 2 {
		t.Errorf("cotal_flooders_closed_total{kind=tasks} = %v, want at least the 2 cuts mallory saw", v)
	}
}
