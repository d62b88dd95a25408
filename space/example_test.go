package space_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

// A mesh in process: a temporary data directory, the space "main", and no TCP listener, so
// it has no join link until it is started with Options.Listen.
func ExampleStart() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := space.Start(ctx, space.Options{Memory: true})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close(ctx)

	fmt.Println(m.Spaces())
	_, err = m.Link("main")
	fmt.Println(errors.Is(err, space.ErrNoListener))
	// Output:
	// [main]
	// true
}

// Two agents talking through an in-process mesh: a multicast on #general (SPEC §4) and a
// direct reply to its sender. Mesh.Endpoint mints each agent's credential with the given
// grants (SPEC §9) and joins Channels before it returns, so nothing sent later is missed.
func ExampleMesh_Endpoint() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := space.Start(ctx, space.Options{Memory: true})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close(ctx)

	general := []string{"general"}
	aliceIn, bobIn := make(chan endpoint.Delivery, 4), make(chan endpoint.Delivery, 4)
	alice, err := m.Endpoint(ctx, space.AgentSpec{Name: "alice",
		Grants:   provisioner.Grants{Subscribe: general, AllowPublish: general},
		Endpoint: endpoint.Options{Channels: general, Handler: exampleQueue(aliceIn)}})
	if err != nil {
		log.Fatal(err)
	}
	bob, err := m.Endpoint(ctx, space.AgentSpec{Name: "bob",
		Grants:   provisioner.Grants{Subscribe: general},
		Endpoint: endpoint.Options{Channels: general, Handler: exampleQueue(bobIn)}})
	if err != nil {
		log.Fatal(err)
	}

	if _, err := alice.Send(ctx, "general", []wire.Part{wire.TextPart("standup in 5")}); err != nil {
		log.Fatal(err)
	}
	d := exampleReceive(ctx, bobIn)
	fmt.Println(d.Meta.Kind, d.Meta.Channel, d.Message.From.Name, d.Message.Parts[0].Text)

	if _, err := bob.SendDM(ctx, d.Message.From.ID, []wire.Part{wire.TextPart("on my way")}); err != nil {
		log.Fatal(err)
	}
	d = exampleReceive(ctx, aliceIn)
	fmt.Println(d.Meta.Kind, d.Message.From.Name, d.Message.Parts[0].Text)
	// Output:
	// channel general alice standup in 5
	// dm bob on my way
}

// exampleQueue is a Handler that hands deliveries to the example through in.
func exampleQueue(in chan<- endpoint.Delivery) endpoint.Handler {
	return func(ctx context.Context, d endpoint.Delivery) error {
		select {
		case in <- d:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// exampleReceive waits for the next delivery on in.
func exampleReceive(ctx context.Context, in <-chan endpoint.Delivery) endpoint.Delivery {
	select {
	case d := <-in:
		return d
	case <-ctx.Done():
		log.Fatal("no delivery: ", ctx.Err())
		return endpoint.Delivery{}
	}
}
