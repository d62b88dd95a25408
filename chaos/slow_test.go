package chaos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/wire"
)

// varz is the part of nats-server's /varz the slow-consumer test reads.
type varz struct {
	Mem           int64 `json:"mem"` // resident set size of the mesh process, bytes
	SlowConsumers int64 `json:"slow_consumers"`
}

func readVarz(t *testing.T, base string) varz {
	t.Helper()
	resp, err := http.Get(base + "/varz")
	if err != nil {
		t.Fatalf("GET /varz: %v", err)
	}
	defer resp.Body.Close()
	var v varz
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("decode /varz: %v", err)
	}
	return v
}

// slowMemoryBound is how far the mesh's resident memory may grow while receivers stall: a
// stalled TCP client's outbound buffer is capped by nats-server's max_pending (64 MiB), a
// stalled durable member's copies by DLV retention (1000 per member, on disk), plus the file
// store's block caches and the garbage collector's headroom.
const slowMemoryBound = 256 << 20

// TestSlowConsumersDoNotSlowOthersOrGrowTheMesh floods a durable channel past a member whose
// Handler never returns and a raw TCP subscriber that never reads its socket. A third member
// must still get every message (SPEC §4), and the mesh's resident memory must stay bounded.
// The fast member's throughput with and without the stalled peers is reported, not asserted.
func TestSlowConsumersDoNotSlowOthersOrGrowTheMesh(t *testing.T) {
	t.Parallel()
	b := binaries(t)
	dir := t.TempDir()
	pubCred := mintCLI(t, b, dir, "pub", "--allow-publish", "flood")
	fastCred := mintCLI(t, b, dir, "fast", "--subscribe", "flood")
	stallCred := mintCLI(t, b, dir, "stalled", "--subscribe", "flood")
	rawCred := mintCLI(t, b, dir, "raw", "--subscribe", "flood")
	mesh := startMesh(t, b, dir, "--http", "127.0.0.1:0", "--sync", "interval")

	var fastGot atomic.Int64
	fast := connectTCP(t, mesh.Link(), fastCred, func(context.Context, endpoint.Delivery) error {
		fastGot.Add(1)
		return nil
	}, func(o *endpoint.Options) { o.Channels = []string{"flood"} })
	var stalling atomic.Bool
	release := make(chan struct{})
	var releaseOnce sync.Once
	defer releaseOnce.Do(func() { close(release) })
	stalled := connectTCP(t, mesh.Link(), stallCred, func(ctx context.Context, _ endpoint.Delivery) error {
		if stalling.Load() {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return nil
	}, func(o *endpoint.Options) { o.Channels = []string{"flood"} })
	joinedDurable(t, fast, "flood")
	joinedDurable(t, stalled, "flood")
	pub := connectTCP(t, mesh.Link(), pubCred, nil)

	payload := strings.Repeat("x", tier.slowPayload)
	calm := flood(t, pub, payload, tier.slowMessages/2, &fastGot)
	before := readVarz(t, mesh.HTTP())

	stalling.Store(true)
	conn := stallRaw(t, mesh.Link(), rawCred)
	defer conn.Close()
	var peak atomic.Int64
	stop := sampleMem(t, mesh.HTTP(), &peak)
	stormy := flood(t, pub, payload, tier.slowMessages/2, &fastGot)
	stop()
	after := readVarz(t, mesh.HTTP())
	growth := peak.Load() - before.Mem
	record(t, fmt.Sprintf("slow consumers: %d × %d KiB past a stalled Handler and a TCP client that never reads",
		tier.slowMessages/2, tier.slowPayload>>10), joinNotes(
		fmt.Sprintf("the fast member got every message; its rate %.0f msg/s with the stalled peers, %.0f msg/s without", stormy, calm),
		fmt.Sprintf("mesh RSS %d MiB before, peak %d MiB (growth %d MiB for %d MiB sent; bound %d MiB)",
			before.Mem>>20, peak.Load()>>20, growth>>20, int64(tier.slowMessages/2*tier.slowPayload)>>20, slowMemoryBound>>20),
		fmt.Sprintf("slow consumers cut off by the broker: %d", after.SlowConsumers-before.SlowConsumers)))
	if growth > slowMemoryBound {
		t.Errorf("the mesh grew by %d MiB while receivers stalled; bound %d MiB", growth>>20, slowMemoryBound>>20)
	}
	releaseOnce.Do(func() { close(release) })
}

// flood publishes n messages of payload on flood, 64 acknowledgements in flight at a time,
// and waits until the fast member surfaced all of them; it returns the fast member's rate.
func flood(t *testing.T, pub *endpoint.Endpoint, payload string, n int, got *atomic.Int64) float64 {
	t.Helper()
	start, want := time.Now(), got.Load()+int64(n)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for sent := 0; sent < n; {
		window := make([]*endpoint.PendingReceipt, 0, 64)
		for ; sent < n && len(window) < 64; sent++ {
			p, err := pub.SendAsync("flood", []wire.Part{wire.TextPart(payload)})
			if err != nil {
				t.Fatalf("flood: %v", err)
			}
			window = append(window, p)
		}
		for _, p := range window {
			if _, err := p.Wait(ctx); err != nil {
				t.Fatalf("flood: %v", err)
			}
		}
	}
	await.True(t, 3*time.Minute, "the fast member surfacing the whole flood", func() bool { return got.Load() >= want })
	return float64(n) / time.Since(start).Seconds()
}

// stallRaw subscribes a raw TCP client to flood's live subject and never reads its socket
// again: the broker's outbound buffer for it fills up.
func stallRaw(t *testing.T, link string, cred minted) net.Conn {
	t.Helper()
	data, err := os.ReadFile(cred.Creds)
	if err != nil {
		t.Fatal(err)
	}
	userJWT, err := nkeys.ParseDecoratedJWT(data)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := nkeys.ParseDecoratedUserNKey(data)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := wire.ParseLink(link)
	conn, _ := rawConnect(t, net.JoinHostPort(l.Host, strconv.Itoa(l.Port)), userJWT, kp)
	fmt.Fprintf(conn, "SUB %s 1\r\nPING\r\n", wire.NewNames("main").ChatFilter("flood"))
	return conn
}

// sampleMem polls the mesh's RSS every 100 ms into peak until stop is called.
func sampleMem(t *testing.T, base string, peak *atomic.Int64) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for {
			if resp, err := http.Get(base + "/varz"); err == nil {
				var v varz
				if json.NewDecoder(resp.Body).Decode(&v) == nil && v.Mem > peak.Load() {
					peak.Store(v.Mem)
				}
				resp.Body.Close()
			}
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
