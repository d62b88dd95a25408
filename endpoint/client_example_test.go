package endpoint_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

// Connecting as a remote agent would: a join link says where the mesh is (SPEC §10) and a
// .creds file who the agent is (SPEC §2, §9). Here the mesh runs in the same program, on a
// free TCP port, and mints the credential; in production `cotal up` and `cotal auth mint` do.
func ExampleConnect() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := space.Start(ctx, space.Options{Memory: true, Listen: "127.0.0.1:0"})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close(ctx)
	link, err := m.Link("main")
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "cotal-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	general := []string{"general"}
	cred, err := m.Mint(ctx, provisioner.MintRequest{Space: "main", Name: "alice",
		Profile: provisioner.ProfileAgent, Grants: provisioner.Grants{Subscribe: general}})
	if err != nil {
		log.Fatal(err)
	}
	credsFile := filepath.Join(dir, "alice.creds")
	if err := provisioner.WriteCredsFile(credsFile, cred); err != nil {
		log.Fatal(err)
	}

	got := make(chan endpoint.Delivery, 4)
	alice, err := endpoint.Connect(ctx, endpoint.Options{
		Link:      link,
		CredsFile: credsFile,
		Channels:  general, // joined before Connect returns
		Handler: func(ctx context.Context, d endpoint.Delivery) error {
			select {
			case got <- d:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer alice.Close(ctx)
	fmt.Println(alice.Name(), alice.ID() == cred.ID, alice.Joined())

	bob, err := m.Endpoint(ctx, space.AgentSpec{Name: "bob",
		Grants: provisioner.Grants{AllowPublish: general}})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := bob.Send(ctx, "general", []wire.Part{wire.TextPart("welcome, alice")}); err != nil {
		log.Fatal(err)
	}
	select {
	case d := <-got:
		fmt.Println(d.Meta.Kind, d.Meta.Channel, d.Message.From.Name, d.Message.Parts[0].Text)
	case <-ctx.Done():
		log.Fatal(ctx.Err())
	}
	// Output:
	// alice true [general]
	// channel general bob welcome, alice
}
