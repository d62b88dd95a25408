// Command mcp runs two `cotal mcp` servers, one per agent, and drives them as two agent
// runtimes would: through the cotal_* tools of the Model Context Protocol, over each server's
// standard input and output.
//
// It starts a mesh listening on a free port of 127.0.0.1, mints alice.creds and bob.creds (bob
// holds the role "reviewer") into a temporary directory, starts `cotal mcp --link LINK --creds
// FILE` for each, and then: alice sends bob a DM by name, bob posts on #general, alice hands a
// task to the role "reviewer"; each message is read with cotal_inbox on the other side.
//
//	go install github.com/cotal-go/cotal@latest
//	go run ./examples/mcp                       # uses cotal from PATH
//	go run ./examples/mcp --cotal ./bin/cotal   # or a cotal binary of your choice
//
// An agent runtime such as Claude Code runs the same command from its MCP configuration; see
// docs/mcp.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
)

func main() {
	cotal := flag.String("cotal", "", "the cotal binary to run `cotal mcp` with; default cotal from PATH")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := run(ctx, *cotal); err != nil {
		fmt.Fprintln(os.Stderr, "mcp:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cotal string) (err error) {
	if cotal == "" {
		if cotal, err = exec.LookPath("cotal"); err != nil {
			return errors.New("no cotal binary on PATH: install it with `go install github.com/cotal-go/cotal@latest`, or pass --cotal PATH")
		}
	}
	dir, err := os.MkdirTemp("", "cotal-mcp-example-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	m, err := space.Start(ctx, space.Options{Listen: "127.0.0.1:0", Memory: true})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, m.Close(context.WithoutCancel(ctx))) }()
	link, err := m.Link("main")
	if err != nil {
		return err
	}
	fmt.Println("mesh listening:", link)

	general := []string{"general"}
	aliceCreds, err := mint(ctx, m, dir, "alice", provisioner.Grants{Subscribe: general, AllowPublish: general})
	if err != nil {
		return err
	}
	bobCreds, err := mint(ctx, m, dir, "bob", provisioner.Grants{Subscribe: general, AllowPublish: general, Role: "reviewer"})
	if err != nil {
		return err
	}
	alice, err := startAgent(ctx, "alice", cotal, link, aliceCreds)
	if err != nil {
		return err
	}
	defer alice.close()
	bob, err := startAgent(ctx, "bob", cotal, link, bobCreds)
	if err != nil {
		return err
	}
	defer bob.close()
	return converse(ctx, alice, bob)
}

// converse is the two agents' exchange, each step a tool call on one side and cotal_inbox on
// the other.
func converse(ctx context.Context, alice, bob *agent) error {
	steps := []struct {
		from, to *agent
		tool     string
		args     map[string]any
	}{
		{alice, bob, "cotal_dm", map[string]any{"to": "bob", "text": "hello bob, this is alice"}},
		{bob, alice, "cotal_send", map[string]any{"text": "hi everyone, bob here"}},
		{alice, bob, "cotal_anycast", map[string]any{"role": "reviewer", "text": "please review PR 12"}},
	}
	for _, s := range steps {
		if err := s.from.call(ctx, s.tool, s.args, nil); err != nil {
			return err
		}
		fmt.Printf("%s called %s\n", s.from.name, s.tool)
		msg, err := s.to.next(ctx)
		if err != nil {
			return err
		}
		where := msg.Kind
		if msg.Channel != "" {
			where += " on #" + msg.Channel
		}
		fmt.Printf("%s's inbox: %s from %s: %s\n", s.to.name, where, msg.From, msg.Text)
	}
	return nil
}

// mint writes an agent credential for name into dir. provision=true creates the agent's
// DM, anycast and durable-copy consumers now (SPEC §8), so nothing sent before it connects
// is lost.
func mint(ctx context.Context, m *space.Mesh, dir, name string, g provisioner.Grants) (string, error) {
	cred, err := m.Mint(ctx, provisioner.MintRequest{Space: "main", Name: name, Profile: provisioner.ProfileAgent,
		Grants: g})
	if err != nil {
		return "", fmt.Errorf("mint %s: %w", name, err)
	}
	f := filepath.Join(dir, name+".creds")
	return f, provisioner.WriteCredsFile(f, cred)
}
