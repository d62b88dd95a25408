package endpoint_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// sustainedDMs is how many DMs one run of BenchmarkSustainedDM sends.
const sustainedDMs = 10000

// BenchmarkSustainedDM: alice sends DMs as fast as they are stored (8 senders, each waiting
// for its PubAck) while one receiver surfaces them: bob's Endpoint, then raw nats.go (its
// default pull batch of 500, acking each copy) with another agent's credential on the same
// mesh, in the same run. In process on memory streams, and over TCP with minted credentials
// on file streams synced at every write (the default of cotal up). It reports each
// side's delivered rate (DMs surfaced per second from the first send to the last copy) and
// cotal/raw, and how many DMs each side had surfaced when the last send was stored; then the
// same with every DM stored before the receiver connects (the backlog rows), which measures
// the receive path alone.
func BenchmarkSustainedDM(b *testing.B) {
	for _, tcp := range []bool{false, true} {
		name := "in_process_memory"
		if tcp {
			name = "tcp_minted_file"
		}
		b.Run(name, func(b *testing.B) {
			m := spacetest.New(b, func(o *space.Options) {
				if tcp {
					o.Listen, o.Memory = spacetest.FreeAddr(b), false
				}
			})
			var cot, raw, cotBacklog, rawBacklog sustained
			for i := 0; i < b.N; i++ {
				cot.add(sustainedRun(b, m, tcp, false, false))
				raw.add(sustainedRun(b, m, tcp, true, false))
				cotBacklog.add(sustainedRun(b, m, tcp, false, true))
				rawBacklog.add(sustainedRun(b, m, tcp, true, true))
			}
			b.ReportMetric(cot.rate(), "cotal_dm/s")
			b.ReportMetric(raw.rate(), "raw_dm/s")
			b.ReportMetric(cot.rate()/raw.rate(), "cotal/raw")
			b.ReportMetric(cot.atEnd(), "cotal_surfaced_at_send_end")
			b.ReportMetric(raw.atEnd(), "raw_surfaced_at_send_end")
			b.ReportMetric(cotBacklog.rate(), "cotal_backlog_dm/s")
			b.ReportMetric(rawBacklog.rate(), "raw_backlog_dm/s")
			b.ReportMetric(cotBacklog.rate()/rawBacklog.rate(), "backlog_cotal/raw")
		})
	}
}

// sustained sums the runs of one side.
type sustained struct {
	n          int
	took       time.Duration
	surfacedAt int
}

func (s *sustained) add(took time.Duration, surfacedAt int) {
	s.n++
	s.took += took
	s.surfacedAt += surfacedAt
}

func (s *sustained) rate() float64  { return float64(s.n*sustainedDMs) / s.took.Seconds() }
func (s *sustained) atEnd() float64 { return float64(s.surfacedAt) / float64(s.n) }

// sustainedRun sends sustainedDMs to a fresh receiver and returns how long until the last
// was surfaced and how many were surfaced when the last send was stored. With backlog the
// receiver connects once every DM is stored, and the clock runs from its first copy.
func sustainedRun(b *testing.B, m *space.Mesh, tcp, raw, backlog bool) (time.Duration, int) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sender := benchEndpoint(b, m, tcp, benchMint(b, m, "alice"), nil)
	rcvCred := benchMint(b, m, "bob")
	var got atomic.Int64
	var first atomic.Pointer[time.Time]
	all := make(chan struct{})
	count := func() {
		if n := got.Add(1); n == 1 {
			now := time.Now()
			first.Store(&now)
		} else if n == sustainedDMs {
			close(all)
		}
	}
	receive := func() {
		if raw {
			rawReceiver(b, m, tcp, rcvCred, count)
		} else {
			benchEndpoint(b, m, tcp, rcvCred, func(context.Context, endpoint.Delivery) error { count(); return nil })
		}
	}
	if backlog {
		sendDMs(ctx, b, sender, rcvCred.ID)
	} else {
		receive()
	}
	start := time.Now()
	if backlog {
		receive()
	} else {
		sendDMs(ctx, b, sender, rcvCred.ID)
	}
	atEnd := int(got.Load())
	select {
	case <-all:
	case <-ctx.Done():
		b.Fatalf("surfaced %d of %d", got.Load(), sustainedDMs)
	}
	if backlog {
		start = *first.Load() // the receiver's connect is not its receive path
	}
	return time.Since(start), atEnd
}

func sendDMs(ctx context.Context, b *testing.B, sender *endpoint.Endpoint, to string) {
	const senders = 8
	var wg sync.WaitGroup
	for w := 0; w < senders; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < sustainedDMs; i += senders {
				if _, err := sender.SendDM(ctx, to, text("sustained")); err != nil {
					b.Errorf("send: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// minted numbers the credentials of a benchmark, so that no mint revokes an earlier one.
var minted atomic.Int64

func benchMint(b *testing.B, m *space.Mesh, name string) *admin.MintedCredential {
	b.Helper()
	name = fmt.Sprintf("%s%d", name, minted.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cred, err := admin.Mint(ctx, m, admin.MintSpec{Space: "main", Profile: "agent", Name: name,
		NoExpiry: true})
	if err != nil {
		b.Fatalf("mint %s: %v", name, err)
	}
	return cred
}

// benchEndpoint connects cred in process or through the mesh's TCP listener, closed with b.
func benchEndpoint(b *testing.B, m *space.Mesh, tcp bool, cred *admin.MintedCredential, h endpoint.Handler) *endpoint.Endpoint {
	b.Helper()
	opts := endpoint.Options{Creds: cred.Creds, Handler: h}
	if tcp {
		link, err := m.Link("main")
		if err != nil {
			b.Fatal(err)
		}
		opts.Link = link
	} else {
		opts.InProcess, opts.Space = m.InProcess(), "main"
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := endpoint.Connect(ctx, opts)
	if err != nil {
		b.Fatalf("connect %s: %v", cred.Name, err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = e.Close(ctx)
	})
	return e
}

// rawReceiver consumes cred's dm_ consumer with bare nats.go, as a hand-rolled client would.
func rawReceiver(b *testing.B, m *space.Mesh, tcp bool, cred *admin.MintedCredential, count func()) {
	b.Helper()
	file := filepath.Join(b.TempDir(), "bob.creds")
	if err := os.WriteFile(file, cred.Creds, 0o600); err != nil {
		b.Fatal(err)
	}
	opts := []nats.Option{nats.UserCredentials(file), nats.CustomInboxPrefix(wire.InboxPrefix(cred.ID))}
	addr := ""
	if tcp {
		link, err := m.Link("main")
		if err != nil {
			b.Fatal(err)
		}
		u, err := url.Parse(strings.Replace(link, "cotal://", "nats://", 1))
		if err != nil {
			b.Fatal(err)
		}
		addr = "nats://" + u.Host
	} else {
		opts = append(opts, nats.InProcessServer(m.InProcess()))
	}
	nc, err := nats.Connect(addr, opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	names := wire.NewNames("main")
	cons, err := js.Consumer(context.Background(), names.DMStream(), names.DMConsumer(cred.ID))
	if err != nil {
		b.Fatal(err)
	}
	cc, err := cons.Consume(func(msg jetstream.Msg) { _ = msg.Ack(); count() })
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cc.Stop)
}
