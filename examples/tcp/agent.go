package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/wire"
)

// agent connects over TCP with a join link and a .creds file, sends one direct message to the
// peer named by --peer and prints the one it receives from that peer.
func agent(ctx context.Context, args []string) (err error) {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	link := fs.String("link", "", "join `link` of the mesh, cotal://host:port/space")
	creds := fs.String("creds", "", "the agent's .creds `file`")
	name := fs.String("name", "", "display name; default the name in the credential")
	peer := fs.String("peer", "", "display `name` of the agent to exchange a DM with")
	timeout := fs.Duration("timeout", 20*time.Second, "give up after this long")
	if err := fs.Parse(args); err != nil || *link == "" || *creds == "" || *peer == "" {
		return errUsage
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	dms := make(chan *wire.CotalMessage, 8)
	// The credential fixes the instance id (SPEC §2); the link only says where the mesh is.
	ep, err := endpoint.Connect(ctx, endpoint.Options{Link: *link, CredsFile: *creds, Name: *name,
		Handler: func(ctx context.Context, d endpoint.Delivery) error {
			if d.Meta.Kind != endpoint.MetaDM {
				return nil
			}
			select {
			case dms <- d.Message:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := ep.Close(context.WithoutCancel(ctx)); cerr != nil && err == nil {
			err = cerr
		}
	}()

	id, err := findPeer(ctx, ep.Roster(), *peer)
	if err != nil {
		return err
	}
	hello := wire.TextPart(fmt.Sprintf("hello %s, this is %s", *peer, ep.Name()))
	if _, err := ep.SendDM(ctx, id, []wire.Part{hello}); err != nil {
		return err
	}
	for {
		select {
		case m := <-dms:
			if m.From.ID == id {
				fmt.Printf("%s got a dm from %s: %s\n", ep.Name(), m.From.Name, m.Parts[0].Text)
				return nil
			}
		case <-ctx.Done():
			return fmt.Errorf("no DM from %s: %w", *peer, ctx.Err())
		}
	}
}

// findPeer waits until an online peer with the display name appears in the roster (SPEC §6)
// and returns its instance id.
func findPeer(ctx context.Context, r *endpoint.Roster, name string) (string, error) {
	events, cancel := r.Subscribe()
	defer cancel()
	for _, p := range r.Snapshot() {
		if p.Online && p.Presence.Card.Name == name {
			return p.Presence.Card.ID, nil
		}
	}
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return "", fmt.Errorf("the roster closed before %s came online", name)
			}
			if ev.Kind != endpoint.PeerOffline && ev.Peer.Presence.Card.Name == name {
				return ev.Peer.Presence.Card.ID, nil
			}
		case <-ctx.Done():
			return "", fmt.Errorf("%s never came online: %w", name, ctx.Err())
		}
	}
}
