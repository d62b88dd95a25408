package endpoint_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/nats-io/nats.go"
)

// lossyProvider hands out in-process connections that lose the first client frame published
// on a subject starting with prefix, as a pull request lost between client and broker.
type lossyProvider struct {
	inner   nats.InProcessConnProvider
	prefix  []byte
	dropped atomic.Int64
}

func (p *lossyProvider) InProcessConn() (net.Conn, error) {
	c, err := p.inner.InProcessConn()
	if err != nil {
		return nil, err
	}
	return &lossyConn{Conn: c, p: p}, nil
}

// lossyConn forwards the client's protocol stream frame by frame, leaving one out.
type lossyConn struct {
	net.Conn
	p   *lossyProvider
	mu  sync.Mutex
	buf []byte
}

func (c *lossyConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf = append(c.buf, b...)
	var out []byte
	for {
		n, drop := c.frame()
		if n == 0 {
			break
		}
		if !drop {
			out = append(out, c.buf[:n]...)
		}
		c.buf = c.buf[n:]
	}
	if len(out) > 0 {
		if _, err := c.Conn.Write(out); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

// frame is the length of the first complete frame in buf (0 if incomplete) and whether it is
// the one to lose: PUB subject [reply] size and HPUB subject [reply] hsize size carry a body.
func (c *lossyConn) frame() (int, bool) {
	end := bytes.Index(c.buf, []byte("\r\n"))
	if end < 0 {
		return 0, false
	}
	line := c.buf[:end]
	f := bytes.Fields(line)
	if len(f) < 3 || !(bytes.Equal(f[0], []byte("PUB")) || bytes.Equal(f[0], []byte("HPUB"))) {
		return end + 2, false
	}
	size, err := strconv.Atoi(string(f[len(f)-1]))
	if err != nil {
		return end + 2, false
	}
	n := end + 2 + size + 2
	if len(c.buf) < n {
		return 0, false
	}
	drop := bytes.HasPrefix(f[1], c.p.prefix) && c.p.dropped.CompareAndSwap(0, 1)
	return n, drop
}

// slowLinkProvider hands out in-process connections that deliver what the broker sends delay
// late, as a slow or distant link does; what the client sends is not delayed.
type slowLinkProvider struct {
	inner nats.InProcessConnProvider
	delay time.Duration
}

func (p *slowLinkProvider) InProcessConn() (net.Conn, error) {
	c, err := p.inner.InProcessConn()
	if err != nil {
		return nil, err
	}
	s := &slowConn{Conn: c, delay: p.delay, chunks: make(chan stamped, 4096)}
	go s.pump()
	return s, nil
}

// stamped is what one read from the broker brought, and when.
type stamped struct {
	data []byte
	at   time.Time
	err  error
}

// slowConn is a delay line in front of the broker's side of a connection.
type slowConn struct {
	net.Conn
	delay  time.Duration
	chunks chan stamped
	rest   []byte
	err    error
}

func (c *slowConn) pump() {
	for {
		buf := make([]byte, 32<<10)
		n, err := c.Conn.Read(buf)
		c.chunks <- stamped{data: buf[:n], at: time.Now(), err: err}
		if err != nil {
			return
		}
	}
}

func (c *slowConn) Read(b []byte) (int, error) {
	for len(c.rest) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		s := <-c.chunks
		due := time.NewTimer(time.Until(s.at.Add(c.delay)))
		<-due.C
		c.rest, c.err = s.data, s.err
	}
	n := copy(b, c.rest)
	c.rest = c.rest[n:]
	return n, nil
}

// A pull of tasks ahead loses none on a slow link: it is not cancelled when its time is up,
// so the tasks still on their way when the broker expires it are handed on rather than left
// to wait out their ack wait (docs/durable.md "Pulling tasks").
func TestAPullAheadLosesNoTaskOnASlowLink(t *testing.T) {
	const tasks = 60
	m := spacetest.New(t)
	alice := meshAgent(t, m, admin.MintSpec{Name: "alice"})
	cred := meshMint(t, m, admin.MintSpec{Name: "worker", Role: "reviewer"})
	worker := meshConnect(t, m, cred, func(o *endpoint.Options) {
		o.InProcess = &slowLinkProvider{inner: m.InProcess(), delay: 300 * time.Millisecond}
	})
	// Paced over 3 s, so that tasks are on their way whenever a pull ahead expires.
	pace := time.NewTicker(50 * time.Millisecond)
	defer pace.Stop()
	ids := make([]string, tasks)
	for i := range ids {
		<-pace.C
		sent, err := alice.SendAnycast(ctxT(t), "reviewer", text(fmt.Sprint("task ", i)))
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = sent.ID
	}
	// Well inside the 60 s ack wait after which a lost task would come back.
	await.True(t, settle, "the worker handles every task", func() bool {
		for _, id := range ids {
			if len(worker.rec.withID(id)) == 0 {
				return false
			}
		}
		return true
	})
	if r := worker.Stats().Redeliveries; r != 0 {
		t.Errorf("the worker got %d redelivered tasks, want 0", r)
	}
}

// A pull request lost on its way to the broker leaves the Endpoint's client counting copies
// nobody owes it; the missed heartbeats make it ask again, so a DM waiting on that consumer
// arrives within seconds, not after the 30 s the lost request would have lasted, and Stats
// counts the pull asked again (docs/durable.md "Pulls that go missing").
func TestALostPullRequestIsAskedAgain(t *testing.T) {
	m := spacetest.New(t)
	alice := meshAgent(t, m, admin.MintSpec{Name: "alice"})
	bobCred := meshMint(t, m, admin.MintSpec{Name: "bob"})
	lossy := &lossyProvider{inner: m.InProcess(),
		prefix: []byte("$JS.API.CONSUMER.MSG.NEXT.DM_main.dm_" + bobCred.ID)}
	bob := meshConnect(t, m, bobCred, func(o *endpoint.Options) { o.InProcess = lossy })
	await.True(t, settle, "the first pull of dm_bob is lost", func() bool { return lossy.dropped.Load() == 1 })

	dm, err := alice.SendDM(ctxT(t), bobCred.ID, text("after a lost pull"))
	if err != nil {
		t.Fatal(err)
	}
	// Well inside the lost request's 30 s expiry, the time nats.go's default heartbeat took
	// to notice it.
	await.True(t, 20*time.Second, "bob surfaces the DM", func() bool { return len(bob.rec.withID(dm.ID)) == 1 })
	if got := bob.Stats().PullsReissued; got < 1 {
		t.Errorf("Stats.PullsReissued = %d, want at least 1", got)
	}
}

// A backlog pulled in one batch waits for a slow Handler without sitting out its ack wait:
// each copy waiting longer than a third of it is marked in progress, so none is redelivered
// while an earlier one is handled (docs/durable.md "Pulling ahead of the Handler").
func TestCopiesPulledAheadOfASlowHandlerAreNotRedelivered(t *testing.T) {
	const dms, handle = 12, 400 * time.Millisecond // the last waits 4.4 s, twice the ack wait
	m := spacetest.New(t, func(o *space.Options) { o.AckWait = 2 * time.Second })
	alice := meshAgent(t, m, admin.MintSpec{Name: "alice"})
	bobCred := meshMint(t, m, admin.MintSpec{Name: "bob"})
	for i := 0; i < dms; i++ {
		if _, err := alice.SendDM(ctxT(t), bobCred.ID, text("backlog")); err != nil {
			t.Fatal(err)
		}
	}
	var handled atomic.Int64
	slow := func(ctx context.Context, _ endpoint.Delivery) error {
		select {
		case <-time.After(handle):
		case <-ctx.Done():
			return ctx.Err()
		}
		handled.Add(1)
		return nil
	}
	bob := meshConnect(t, m, bobCred, func(o *endpoint.Options) { o.Handler = slow })
	await.True(t, settle+dms*handle, "bob handles every DM", func() bool { return handled.Load() >= dms })
	st := bob.Stats()
	if st.Redeliveries != 0 || st.Duplicates != 0 || handled.Load() != dms {
		t.Errorf("handled %d, redeliveries %d, duplicates %d; want %d, 0, 0",
			handled.Load(), st.Redeliveries, st.Duplicates, dms)
	}
}

// A Handler that runs past its copy's ack wait keeps the copy: the queue that served it marks
// it in progress while it is in hand, so it is not redelivered meanwhile.
func TestACopyInAHandlerLongerThanItsAckWaitIsNotRedelivered(t *testing.T) {
	const ackWait = 2 * time.Second
	m := spacetest.New(t, func(o *space.Options) { o.AckWait = ackWait })
	alice := meshAgent(t, m, admin.MintSpec{Name: "alice"})
	bobCred := meshMint(t, m, admin.MintSpec{Name: "bob"})
	var calls atomic.Int64
	long := func(ctx context.Context, _ endpoint.Delivery) error {
		if calls.Add(1) == 1 {
			select {
			case <-time.After(5 * ackWait / 2):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	bob := meshConnect(t, m, bobCred, func(o *endpoint.Options) { o.Handler = long })
	if _, err := alice.SendDM(ctxT(t), bobCred.ID, text("long")); err != nil {
		t.Fatal(err)
	}
	await.True(t, settle+3*ackWait, "bob handled the DM and dm_ owes nothing", func() bool {
		if calls.Load() == 0 {
			return false
		}
		backlog, err := bob.Backlog(ctxT(t))
		if err != nil {
			return false
		}
		for _, b := range backlog {
			if b.Kind == endpoint.MetaDM && (b.Waiting > 0 || b.InFlight > 0) {
				return false
			}
		}
		return true
	})
	if st := bob.Stats(); calls.Load() != 1 || st.Redeliveries != 0 || st.Duplicates != 0 {
		t.Errorf("handler calls %d, redeliveries %d, duplicates %d; want 1, 0, 0", calls.Load(), st.Redeliveries, st.Duplicates)
	}
}

// taskTally counts how many times each task was handled.
type taskTally struct {
	mu      sync.Mutex
	handled map[string]int
}

func (c *taskTally) record(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.handled == nil {
		c.handled = map[string]int{}
	}
	c.handled[id]++
}

// handler records each task it handles; one that blocks says so first signals busy and waits
// for release.
func (c *taskTally) handler(busy chan<- struct{}, release <-chan struct{}, blocks func(endpoint.Delivery) bool) endpoint.Handler {
	return func(ctx context.Context, d endpoint.Delivery) error {
		if blocks(d) {
			busy <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		c.record(d.Message.ID)
		return nil
	}
}

// unique is how many tasks were handled at least once.
func (c *taskTally) unique() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.handled)
}

// handledOnce fails t for every task handled more than once.
func (c *taskTally) handledOnce(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, n := range c.handled {
		if n != 1 {
			t.Errorf("task %s handled %d times, want once", id, n)
		}
	}
}

// A holder of a role whose Handler is busy holds only the task in hand: the role's other
// holders take the rest at once, none of them after a redelivery, and no task is handled twice
// (docs/durable.md "Pulling tasks").
func TestABusyHolderHoldsOnlyTheTaskInHand(t *testing.T) {
	const tasks = 12
	m := spacetest.New(t, func(o *space.Options) { o.AckWait = 2 * time.Second })
	alice := meshAgent(t, m, admin.MintSpec{Name: "alice"})
	var tally taskTally
	release, busy := make(chan struct{}), make(chan struct{}, tasks)
	slow := meshAgent(t, m, admin.MintSpec{Name: "slow", Role: "reviewer"}, func(o *endpoint.Options) {
		o.Handler = tally.handler(busy, release, func(endpoint.Delivery) bool { return true })
	})
	sendTasks(t, alice, "reviewer", "task", tasks)
	select {
	case <-busy:
	case <-ctxT(t).Done():
		t.Fatal("the slow holder got no task")
	}
	fast := meshAgent(t, m, admin.MintSpec{Name: "fast", Role: "reviewer"}, func(o *endpoint.Options) {
		o.Handler = func(_ context.Context, d endpoint.Delivery) error { tally.record(d.Message.ID); return nil }
	})
	await.True(t, settle, "the fast holder handles every task but the one in hand", func() bool { return tally.unique() == tasks-1 })
	close(release)
	await.True(t, settle, "every task handled", func() bool { return tally.unique() == tasks })
	tally.handledOnce(t)
	for name, p := range map[string]*peer{"slow": slow, "fast": fast} {
		if r := p.Stats().Redeliveries; r != 0 {
			t.Errorf("the %s holder got %d redelivered tasks, want 0", name, r)
		}
	}
}

// A holder whose Handler stalls on a task hands the tasks it pulled behind it back to the role's
// other holders, unhandled, well inside their ack wait (docs/durable.md "Pulling tasks").
func TestAStalledHolderHandsBackTheTasksBehindIt(t *testing.T) {
	const warm, behind = 20, 10
	m := spacetest.New(t)
	alice := meshAgent(t, m, admin.MintSpec{Name: "alice"})
	var tally taskTally
	release, busy := make(chan struct{}), make(chan struct{}, 1)
	stalled := meshAgent(t, m, admin.MintSpec{Name: "stalled", Role: "reviewer"}, func(o *endpoint.Options) {
		o.Handler = tally.handler(busy, release, func(d endpoint.Delivery) bool { return d.Message.Parts[0].Text == "stall" })
	})
	sendTasks(t, alice, "reviewer", "warm", warm)
	await.True(t, settle, "the warm-up tasks handled", func() bool { return tally.unique() == warm })
	if _, err := alice.SendAnycast(ctxT(t), "reviewer", text("stall")); err != nil {
		t.Fatal(err)
	}
	sendTasks(t, alice, "reviewer", "task", behind)
	select {
	case <-busy:
	case <-ctxT(t).Done():
		t.Fatal("the stalling task never reached the Handler")
	}
	await.True(t, settle, "every task delivered to the stalled holder", func() bool {
		b, err := m.Pending(ctxT(t), "main", stalled.ID())
		return err == nil && b.Anycast != nil && b.Anycast.Pending == 0 && b.Anycast.AckPending == behind+1
	})
	meshAgent(t, m, admin.MintSpec{Name: "other", Role: "reviewer"}, func(o *endpoint.Options) {
		o.Handler = func(_ context.Context, d endpoint.Delivery) error { tally.record(d.Message.ID); return nil }
	})
	await.True(t, settle, "the other holder handles the tasks behind the stalled one", func() bool {
		return tally.unique() == warm+behind
	})
	if n := stalled.Stats().TasksHandedBack; n != behind {
		t.Errorf("the stalled holder handed back %d tasks, want %d", n, behind)
	}
	close(release)
	await.True(t, settle, "every task handled", func() bool { return tally.unique() == warm+behind+1 })
	tally.handledOnce(t)
}
