package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/spf13/cobra"
)

// version is the release version, set at build time with
// -ldflags "-X github.com/cotal-go/cotal/internal/cli.version=v1.2.3"; empty means the module
// version from the build info (go build and go install in a git clone record a pseudo-version
// from the commit unless -buildvcs=false), or "devel".
var version string

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the cotal, Go and embedded nats-server versions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "cotal %s\nGo %s\nnats-server %s\n",
				cotalVersion(), strings.TrimPrefix(runtime.Version(), "go"), server.VERSION)
			return err
		},
	}
}

// cotalVersion is version, else the main module's version when built with go install
// module@version, else "devel".
func cotalVersion() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "devel"
}
