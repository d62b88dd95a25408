// Command pertest is a tiny service with a test that gives itself a whole mesh: the shouter
// answers anycast requests to the role "shouter" (SPEC §4) with the request's text in upper
// case, sent back to the requester as a direct message marked as a reply (SPEC §5).
//
// pertest_test.go is the point of the example: spacetest.New starts a private, in-memory mesh
// for one test and closes it at cleanup, so the service is tested against the real broker
// with nothing to install or tear down by hand. Run it with
//
//	go test ./examples/pertest
//
// Run without arguments, the command itself starts a mesh, serves one request and exits.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

// Role is the anycast role the shouter serves.
const Role = "shouter"

// Shout returns the service's Handler for ep, to install with ep.Handle: each anycast request
// with text is answered with a direct message to its sender (SPEC §4, §5). A request whose
// reply cannot be sent is nak'd, so the broker hands it out again; a request without text,
// and every other delivery, is acknowledged and ignored, since redelivery would not help.
func Shout(ep *endpoint.Endpoint) endpoint.Handler {
	return func(ctx context.Context, d endpoint.Delivery) error {
		if d.Meta.Kind != endpoint.MetaAnycast {
			return nil
		}
		text, ok := firstText(d.Message)
		if !ok {
			return nil
		}
		_, err := ep.SendDM(ctx, d.Message.From.ID, []wire.Part{wire.TextPart(strings.ToUpper(text))},
			endpoint.WithReplyTo(d.Message.ID))
		return err
	}
}

// firstText is the text of m's first text part.
func firstText(m *wire.CotalMessage) (string, bool) {
	for _, p := range m.Parts {
		if p.Kind == wire.PartText {
			return p.Text, true
		}
	}
	return "", false
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

func run(ctx context.Context) (err error) {
	m, err := space.Start(ctx, space.Options{Memory: true})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, m.Close(context.WithoutCancel(ctx))) }()

	shouter, err := m.Endpoint(ctx, space.AgentSpec{Name: "shouter", Grants: provisioner.Grants{Role: Role}})
	if err != nil {
		return err
	}
	shouter.Handle(Shout(shouter))

	replies := make(chan *wire.CotalMessage, 1)
	client, err := m.Endpoint(ctx, space.AgentSpec{Name: "client",
		Endpoint: endpoint.Options{Handler: func(ctx context.Context, d endpoint.Delivery) error {
			select {
			case replies <- d.Message:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}}})
	if err != nil {
		return err
	}
	if _, err := client.SendAnycast(ctx, Role, []wire.Part{wire.TextPart("hello, service")}); err != nil {
		return err
	}
	select {
	case r := <-replies:
		fmt.Printf("%s replied: %s\n", r.From.Name, r.Parts[0].Text)
		return nil
	case <-ctx.Done():
		return fmt.Errorf("no reply from the %s service: %w", Role, ctx.Err())
	}
}
