package space

import (
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

func TestParsePullReadsTheRequesterAndTheExpiry(t *testing.T) {
	now := time.Now()
	msg := &nats.Msg{Subject: "$JS.API.CONSUMER.MSG.NEXT.DM_main.dm_bob", Reply: "_R_.abcd.xyz",
		Header: nats.Header{requestInfoHdr: []string{`{"server":"n1","id":42,"acc":"A"}`}},
		Data:   []byte(`{"batch":500,"expires":30000000000,"idle_heartbeat":15000000000}`)}
	c, r, ok := parsePull(msg, now)
	if !ok {
		t.Fatal("a pull with its requester was not read")
	}
	if c != (connKey{"n1", 42}) || r.durable != (durableKey{"DM_main", "dm_bob"}) || r.reply != msg.Reply ||
		!r.expires.Equal(now.Add(30*time.Second)) {
		t.Fatalf("read %+v %+v", c, r)
	}
	msg.Data = []byte("1")
	if _, r, _ := parsePull(msg, now); !r.expires.Equal(now.Add(unboundedPull)) {
		t.Fatalf("a pull without expiry expires at %v", r.expires)
	}
	for _, bad := range []*nats.Msg{
		{Subject: msg.Subject, Reply: msg.Reply, Data: msg.Data}, // no requester: not across the import
		{Subject: msg.Subject, Reply: "_INBOX.x", Header: msg.Header},
		{Subject: "$JS.API.CONSUMER.MSG.NEXT.DM_main", Reply: msg.Reply, Header: msg.Header},
	} {
		if _, _, ok := parsePull(bad, now); ok {
			t.Errorf("read %+v as a pull", bad)
		}
	}
}

func TestThePullLedgerKnowsWhenNoConnectionPullsADurable(t *testing.T) {
	l := newPullLedger()
	now := time.Now()
	d := durableKey{"TASK_main", "svc_rev"}
	a, b := connKey{"n1", 1}, connKey{"n1", 2}
	l.record(a, pullRec{reply: "_R_.a.1", durable: d, expires: now.Add(30 * time.Second)}, now)
	l.record(b, pullRec{reply: "_R_.a.2", durable: d, expires: now.Add(time.Second)}, now)
	open, orphaned := l.end(a, now, true)
	if len(open) != 1 || open[0].reply != "_R_.a.1" || len(orphaned) != 0 {
		t.Fatalf("a's end: open %+v, orphaned %+v; b still pulls", open, orphaned)
	}
	open, orphaned = l.end(b, now.Add(2*time.Second), true)
	if len(open) != 0 || !slices.Equal(orphaned, []durableKey{d}) {
		t.Fatalf("b's end: open %+v (expired), orphaned %+v", open, orphaned)
	}
	if late, _, _ := l.record(a, pullRec{reply: "_R_.a.3", durable: d, expires: now.Add(time.Minute)}, now); !late {
		t.Fatal("a pull read after its connection's end is not late")
	}
}

// A pull read after its connection's end orphans its durable as the end would have: only
// when the client ended the connection and no other connection pulls the durable.
func TestAPullReadAfterItsConnectionsEndOrphansAsTheEndWould(t *testing.T) {
	for _, tc := range []struct {
		name         string
		byClient     bool
		otherPuller  bool
		wantOrphaned bool
	}{
		{name: "closed by its client, nobody else pulls", byClient: true, wantOrphaned: true},
		{name: "closed by its client, another pulls", byClient: true, otherPuller: true},
		{name: "cut by the server", byClient: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newPullLedger()
			now := time.Now()
			d := durableKey{"DM_main", "dm_bob"}
			gone, other := connKey{"n1", 1}, connKey{"n1", 2}
			if tc.otherPuller {
				l.record(other, pullRec{reply: "_R_.b.1", durable: d, expires: now.Add(time.Minute)}, now)
			}
			if _, orphaned := l.end(gone, now, tc.byClient); len(orphaned) != 0 {
				t.Fatalf("an end with no pull read orphaned %v", orphaned)
			}
			late, orphaned, _ := l.record(gone, pullRec{reply: "_R_.a.1", durable: d, expires: now.Add(time.Minute)}, now)
			if !late || orphaned != tc.wantOrphaned {
				t.Fatalf("late %v, orphaned %v; want late, orphaned %v", late, orphaned, tc.wantOrphaned)
			}
		})
	}
}

func TestAConnectionTheServerCutOrphansNothing(t *testing.T) {
	l := newPullLedger()
	now := time.Now()
	d := durableKey{"DM_main", "dm_bob"}
	c := connKey{"n1", 1}
	l.record(c, pullRec{reply: "_R_.a.1", durable: d, expires: now.Add(time.Minute)}, now)
	open, orphaned := l.end(c, now, false)
	if len(open) != 1 || len(orphaned) != 0 {
		t.Fatalf("open %+v, orphaned %+v; want its pull open and nothing orphaned", open, orphaned)
	}
	if l.pullerCount(d) != 0 {
		t.Fatal("the cut connection still counts as pulling")
	}
}

func TestAHeldBackCopyIsReleasedByTheNextFirstPull(t *testing.T) {
	l := newPullLedger()
	now := time.Now()
	d := durableKey{"DM_main", "dm_bob"}
	l.watch(d, now.Add(30*time.Second))
	l.mu.Lock()
	l.held[d] = []string{"$JS.ACK.DM_main.dm_bob.1.5.5.0.0"}
	l.mu.Unlock()
	c := connKey{"n1", 7}
	if _, _, release := l.record(c, pullRec{reply: "_R_.a.1", durable: d, expires: now.Add(time.Minute)}, now); len(release) != 1 {
		t.Fatalf("the first pull released %v", release)
	}
	l.mu.Lock()
	l.held[d] = []string{"$JS.ACK.DM_main.dm_bob.1.6.6.0.0"}
	l.mu.Unlock()
	if _, _, release := l.record(c, pullRec{reply: "_R_.a.2", durable: d, expires: now.Add(time.Minute)}, now); len(release) != 0 {
		t.Fatalf("a second pull of the same holder released %v", release)
	}
}

func TestThePullLedgerForgetsConnectionsItHeardNoEndOf(t *testing.T) {
	l := newPullLedger()
	now := time.Now()
	d := durableKey{"DM_main", "dm_bob"}
	gone := connKey{"n2", 9}
	l.record(gone, pullRec{reply: "_R_.a.1", durable: d, expires: now.Add(time.Second)}, now)
	l.end(connKey{"n1", 1}, now.Add(2*endedKept), true)
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.byConn[gone]; ok || len(l.pullers[d]) != 0 {
		t.Fatalf("a connection silent for %v is still known: %+v", 2*endedKept, l.byConn)
	}
}
