package delivery

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/wire"

	"github.com/cotal-go/cotal/internal/await"
)

// BenchmarkDurableFanout measures the backstop end to end (docs/durable.md "Fan-out"): b.N
// messages published on a durable channel with 10 members, until every member's copy is stored
// on DLV, with the publisher held at most maxAhead messages ahead of the fan-out. msgs/s counts
// published messages, copies/s DLV copies.
func BenchmarkDurableFanout(b *testing.B) {
	const members, maxAhead = 10, 500
	h := newHarness(b)
	// The members read nothing: with DLV's bound the reader would refuse every copy past it.
	h.setHandoffBound(wire.Unlimited)
	alice := h.newAgent("alice", "team")
	for i := range members {
		h.newAgent(fmt.Sprintf("m%d", i), "team").join("team")
	}
	js, err := jetstream.New(h.nc)
	if err != nil {
		b.Fatal(err)
	}
	payloads := make([]*wire.CotalMessage, b.N)
	for i := range payloads {
		payloads[i] = wire.NewChannelMessage(testSpace, alice.ref(), "team", wire.Part{Kind: "text", Text: "x"})
	}
	subject := testNames.ChatSubject(alice.id, "team")
	want := int64(b.N * members)

	b.ResetTimer()
	start := time.Now()
	for i, m := range payloads {
		// Closed loop: stay within CHAT's 1000 messages per sender+channel subject, which a
		// real burst past the fan-out would overrun (and the fan-out would report as a gap).
		for int64(i)-h.svc.Stats().FannedOutDurable/members > maxAhead {
			time.Sleep(100 * time.Microsecond)
		}
		if _, err := js.PublishMsgAsync(&nats.Msg{Subject: subject, Data: mustJSON(b, m)}, jetstream.WithMsgID(m.ID)); err != nil {
			b.Fatal(err)
		}
	}
	await.Check(b, waitFor, pollEvery, func() error {
		if got := h.svc.Stats().ReaderDelivered; got < want {
			return fmt.Errorf("%d of %d copies delivered; stats %+v", got, want, h.svc.Stats())
		}
		return nil
	})
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(want)/elapsed.Seconds(), "copies/s")
	if st := h.svc.Stats(); st.GapsDetected != 0 || st.ReaderGaps != 0 {
		b.Fatalf("gaps during the benchmark: %d in CHAT, %d in INBOX", st.GapsDetected, st.ReaderGaps)
	}
}
