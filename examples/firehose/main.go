// Command firehose sends DMs as fast as the mesh stores them and says where it stands. Alice
// sends bob -n DMs asynchronously (SendDMAsync), keeping at most -window of them awaiting
// JetStream's acknowledgement: when the window is full she selects on the oldest receipt's
// Done before sending the next. It prints the send rate, then bob's receive rate, then what
// bob's DM consumer still owes him (Backlog), which is nothing once he has handled them all.
//
// A receipt means stored, not delivered (SPEC §4): the two rates differ by what waits in
// bob's dm_<id> consumer meanwhile.
//
//	go run ./examples/firehose -n 20000 -window 512
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

func main() {
	n := flag.Int("n", 20000, "DMs to send")
	window := flag.Int("window", 512, "DMs awaiting their acknowledgement at most")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, *n, *window); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

func run(ctx context.Context, n, window int) (err error) {
	m, err := space.Start(ctx, space.Options{Memory: true})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := m.Close(context.WithoutCancel(ctx)); cerr != nil && err == nil {
			err = cerr
		}
	}()

	var got atomic.Int64
	all := make(chan struct{})
	// Connect returns once bob's dm_ consumer is bound: nothing sent afterwards waits on it.
	bob, err := m.Endpoint(ctx, space.AgentSpec{Name: "bob", Endpoint: endpoint.Options{
		Handler: func(context.Context, endpoint.Delivery) error {
			if got.Add(1) == int64(n) {
				close(all)
			}
			return nil
		}}})
	if err != nil {
		return err
	}
	alice, err := m.Endpoint(ctx, space.AgentSpec{Name: "alice",
		Endpoint: endpoint.Options{MaxPendingAsync: window}})
	if err != nil {
		return err
	}

	start := time.Now()
	if err := send(ctx, alice, bob.ID(), n, window); err != nil {
		return err
	}
	fmt.Printf("alice sent %d DMs, at most %d awaiting acknowledgement: %s\n", n, window, rate(n, time.Since(start)))
	select {
	case <-all:
	case <-ctx.Done():
		return fmt.Errorf("bob got %d of %d DMs: %w", got.Load(), n, ctx.Err())
	}
	fmt.Printf("bob handled %d DMs: %s\n", bob.Stats().Surfaced.DM, rate(n, time.Since(start)))
	return owed(ctx, bob)
}

// send sends n DMs to id with at most window of them unacknowledged, in order: the oldest
// receipt is always the first to wait on.
func send(ctx context.Context, alice *endpoint.Endpoint, id string, n, window int) error {
	parts := []wire.Part{wire.TextPart(strings.Repeat("x", 128))}
	pending := make([]*endpoint.PendingReceipt, 0, window)
	settle := func() error {
		select {
		case <-pending[0].Done():
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := pending[0].Err(); err != nil {
			return err
		}
		pending = pending[1:]
		return nil
	}
	for range n {
		if len(pending) == window {
			if err := settle(); err != nil {
				return err
			}
		}
		p, err := alice.SendDMAsync(id, parts)
		if err != nil {
			return err
		}
		pending = append(pending, p)
	}
	for len(pending) > 0 {
		if err := settle(); err != nil {
			return err
		}
	}
	return nil
}

// owed prints what bob's consumers still owe him. A DM is acknowledged right after its
// Handler returns, so the last acknowledgements may still be on their way.
func owed(ctx context.Context, bob *endpoint.Endpoint) error {
	for {
		backlog, err := bob.Backlog(ctx)
		if err != nil {
			return err
		}
		dm := backlog[0]
		if dm.Waiting == 0 && dm.InFlight == 0 {
			fmt.Println("bob's DM consumer owes him nothing")
			return nil
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return errors.Join(ctx.Err(), fmt.Errorf("bob's %s still owes %d", dm.Consumer, dm.Waiting+uint64(dm.InFlight)))
		}
	}
}

// rate formats n messages in d.
func rate(n int, d time.Duration) string {
	return fmt.Sprintf("%.2fs, %.0f msg/s", d.Seconds(), float64(n)/d.Seconds())
}
