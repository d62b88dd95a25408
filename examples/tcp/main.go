// Command tcp runs two agents in separate processes that reach a mesh over TCP, each with its
// own .creds file (SPEC §9, §10), and exchange a direct message.
//
// Without arguments it runs the whole demo and exits: it starts a mesh listening on a free
// port of 127.0.0.1, mints alice.creds and bob.creds into a temporary directory, runs itself
// twice as the two agent processes, and prints what each process printed.
//
//	go run ./examples/tcp
//
// The same steps by hand, in three terminals:
//
//	go run ./examples/tcp serve --listen 127.0.0.1:4333 --creds-dir /tmp/creds
//	go run ./examples/tcp agent --link cotal://127.0.0.1:4333/main --creds /tmp/creds/alice.creds --peer bob
//	go run ./examples/tcp agent --link cotal://127.0.0.1:4333/main --creds /tmp/creds/bob.creds --peer alice
//
// An agent finds its peer by name in the roster (SPEC §6), sends it a direct message, and
// exits once the peer's message has arrived. Direct messages wait in the DM stream for their
// target (SPEC §4, §8), so it does not matter which agent starts first.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

const usage = `usage:
  tcp                                              run the whole demo and exit
  tcp serve [--listen HOST:PORT] [--creds-dir DIR]   start a mesh and mint alice.creds and bob.creds
  tcp agent --link LINK --creds FILE --peer NAME [--name NAME] [--timeout D]
                                                   connect, DM the peer, print its DM, exit`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch {
	case len(os.Args) == 1:
		err = demo(ctx)
	case os.Args[1] == "serve":
		err = serve(ctx, os.Args[2:])
	case os.Args[1] == "agent":
		err = agent(ctx, os.Args[2:])
	default:
		err = errUsage
	}
	if errors.Is(err, errUsage) {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tcp:", err)
		os.Exit(1)
	}
}

// errUsage is returned for a command line that names no known subcommand or misses a flag.
var errUsage = errors.New("usage")
