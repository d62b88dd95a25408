package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
)

// agents are the two identities the mesh mints, each the other's peer.
var agents = [2]string{"alice", "bob"}

// serve starts a mesh on a TCP listener, writes the two .creds files and runs until ctx ends
// (Ctrl-C).
func serve(ctx context.Context, args []string) (err error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:4333", "TCP listener `host:port`; port 0 picks a free one")
	dir := fs.String("creds-dir", "", "directory for alice.creds and bob.creds; default a temporary one, removed on exit")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if *dir == "" {
		if *dir, err = os.MkdirTemp("", "cotal-tcp-creds-"); err != nil {
			return err
		}
		defer os.RemoveAll(*dir)
	}
	m, link, files, err := startMesh(ctx, *listen, *dir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, m.Close(context.WithoutCancel(ctx))) }()

	fmt.Printf("mesh listening: %s\n", link)
	fmt.Println("in two more terminals:")
	for i, f := range files {
		fmt.Printf("  go run ./examples/tcp agent --link %s --creds %s --peer %s\n", link, f, agents[1-i])
	}
	fmt.Println("press Ctrl-C to stop")
	<-ctx.Done()
	return nil
}

// startMesh starts an in-memory mesh listening on listen and mints one agent credential per
// name of agents into dir, created with mode 0700 if missing; the files are 0600. It returns
// the join link (SPEC §10) and the file paths, in the order of agents.
func startMesh(ctx context.Context, listen, dir string) (*space.Mesh, string, []string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", nil, fmt.Errorf("create the credentials directory: %w", err)
	}
	m, err := space.Start(ctx, space.Options{Listen: listen, Memory: true})
	if err != nil {
		return nil, "", nil, err
	}
	link, files, err := mintAgents(ctx, m, dir)
	if err != nil {
		return nil, "", nil, errors.Join(err, m.Close(context.WithoutCancel(ctx)))
	}
	return m, link, files, nil
}

func mintAgents(ctx context.Context, m *space.Mesh, dir string) (string, []string, error) {
	link, err := m.Link("main")
	if err != nil {
		return "", nil, err
	}
	var files []string
	for _, name := range agents {
		// provision=true creates the agent's bind-only DM consumer now (SPEC §8), so a DM
		// sent to it before it connects waits for it.
		cred, err := m.Mint(ctx, provisioner.MintRequest{Space: "main", Name: name,
			Profile: provisioner.ProfileAgent})
		if err != nil {
			return "", nil, fmt.Errorf("mint %s: %w", name, err)
		}
		f := filepath.Join(dir, name+".creds")
		if err := provisioner.WriteCredsFile(f, cred); err != nil {
			return "", nil, err
		}
		files = append(files, f)
	}
	return link, files, nil
}
