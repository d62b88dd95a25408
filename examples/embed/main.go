// Command embed runs a whole cotal mesh inside a Go program: space.Start starts the broker
// in process, with a temporary data directory and no TCP listener, and two agents, alice and
// bob, talk through it. Alice multicasts on #general (SPEC §4), bob answers her with a direct
// message, and the mesh closes cleanly, each agent leaving a final offline presence (SPEC §6).
//
//	go run ./examples/embed
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

func run(ctx context.Context) (err error) {
	// The zero Options is a private mesh: temporary directory, space "main", in-process only.
	m, err := space.Start(ctx, space.Options{Memory: true})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := m.Close(context.WithoutCancel(ctx)); cerr != nil && err == nil {
			err = cerr
		}
	}()

	general := []string{"general"}
	aliceIn, bobIn := make(chan endpoint.Delivery, 8), make(chan endpoint.Delivery, 8)
	// Mesh.Endpoint mints a credential with these grants (SPEC §9) and connects in process;
	// the credential's Subscribe channels are joined before it returns, so nothing sent
	// afterwards is missed.
	alice, err := m.Endpoint(ctx, space.AgentSpec{Name: "alice",
		Grants:   provisioner.Grants{Subscribe: general, AllowPublish: general},
		Endpoint: endpoint.Options{Handler: forward(aliceIn)}})
	if err != nil {
		return err
	}
	bob, err := m.Endpoint(ctx, space.AgentSpec{Name: "bob",
		Grants:   provisioner.Grants{Subscribe: general, AllowPublish: general},
		Endpoint: endpoint.Options{Handler: forward(bobIn)}})
	if err != nil {
		return err
	}

	if _, err := alice.Send(ctx, "general", []wire.Part{wire.TextPart("hello, everyone")}); err != nil {
		return err
	}
	got, err := next(ctx, bobIn)
	if err != nil {
		return fmt.Errorf("bob waits for alice: %w", err)
	}
	fmt.Printf("bob got a %s message on #%s from %s: %s\n", got.Meta.Kind, got.Meta.Channel,
		got.Message.From.Name, got.Message.Parts[0].Text)

	// A reply goes to the sender's instance id, taken from the message (SPEC §2, §5).
	if _, err := bob.SendDM(ctx, got.Message.From.ID, []wire.Part{wire.TextPart("hi alice, bob here")},
		endpoint.WithReplyTo(got.Message.ID)); err != nil {
		return err
	}
	got, err = next(ctx, aliceIn)
	if err != nil {
		return fmt.Errorf("alice waits for bob: %w", err)
	}
	fmt.Printf("alice got a %s from %s: %s\n", got.Meta.Kind, got.Message.From.Name, got.Message.Parts[0].Text)
	fmt.Println("closing the mesh")
	return nil
}

// forward is a Handler that hands every delivery to the program through in. It acknowledges
// once the delivery is queued; Handlers run on the Endpoint's goroutines and must not block
// past the Endpoint's life, hence the select on ctx.
func forward(in chan<- endpoint.Delivery) endpoint.Handler {
	return func(ctx context.Context, d endpoint.Delivery) error {
		select {
		case in <- d:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// next waits for the next delivery or the end of ctx.
func next(ctx context.Context, in <-chan endpoint.Delivery) (endpoint.Delivery, error) {
	select {
	case d := <-in:
		return d, nil
	case <-ctx.Done():
		return endpoint.Delivery{}, ctx.Err()
	}
}
