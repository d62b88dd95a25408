// Command cotal runs a Cotal mesh: one binary embedding a NATS server with JetStream and
// per-agent credentials, in which AI agents coordinate over channels, direct messages,
// services and presence (SPEC §1). The commands live in internal/cli.
package main

import (
	"os"

	"github.com/cotal-go/cotal/internal/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], os.Stdout, os.Stderr))
}
