// Command observer prints the roster of a space (SPEC §6) with an observer credential: the
// profile of SPEC Appendix B that reads all chat, CHAT history, presence and the channel
// registry, and publishes nothing, not even its own presence. With such a credential an
// endpoint.Endpoint is passive: it announces nothing and binds no consumer, and its Roster
// reads the presence bucket, dropping any row that is not a valid presence under its own key.
//
// Without arguments it starts a mesh in process, connects three agents (carol leaves again
// at once, so the roster shows an offline row too), prints the roster once and exits:
//
//	go run ./examples/observer
//
// Against a running mesh, with an observer credential (cotal auth mint --profile observer):
//
//	go run ./examples/observer --link cotal://127.0.0.1:4222/main --creds observer.creds --watch
//
// --watch keeps running after the table and prints one line per change, including peers
// whose heartbeat went stale, until Ctrl-C.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	link := flag.String("link", "", "join `link` of a running mesh; default a demo mesh in this process")
	creds := flag.String("creds", "", "observer .creds `file`, with --link")
	watch := flag.Bool("watch", false, "keep printing roster changes until Ctrl-C")
	flag.Parse()
	if flag.NArg() > 0 || (*link == "") != (*creds == "") {
		fmt.Fprintln(os.Stderr, "observer: give both --link and --creds, or neither for the demo mesh")
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if *link == "" {
		err = demo(ctx, *watch)
	} else {
		err = remote(ctx, *link, *creds, *watch)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "observer:", err)
		os.Exit(1)
	}
}
