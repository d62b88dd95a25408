// Command readme is the embedding example of README.md, kept here so that it builds and runs:
// the examples' tests fail when the two differ.
//
//	go run ./examples/readme
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

func main() {
	ctx := context.Background()
	m, err := space.Start(ctx, space.Options{}) // temporary data directory, space "main", no TCP listener
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close(ctx) // also closes the agents, each with a final offline presence

	general := []string{"general"}
	got := make(chan string, 1)
	_, err = m.Endpoint(ctx, space.AgentSpec{
		Name: "bob",
		// bob reads and joins #general (SPEC §9); Endpoint returns once it is joined and
		// bob's own consumers are bound, so nothing sent afterwards is missed.
		Grants: provisioner.Grants{Subscribe: general},
		Endpoint: endpoint.Options{
			Handler: func(ctx context.Context, d endpoint.Delivery) error {
				got <- d.Message.From.Name + ": " + d.Message.Parts[0].Text
				return nil // acknowledges a JetStream copy
			},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	alice, err := m.Endpoint(ctx, space.AgentSpec{Name: "alice",
		Grants: provisioner.Grants{AllowPublish: general}})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := alice.Send(ctx, "general", []wire.Part{wire.TextPart("hello, bob")}); err != nil {
		log.Fatal(err)
	}
	fmt.Println(<-got) // alice: hello, bob
}
