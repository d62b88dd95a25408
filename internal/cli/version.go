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
			_, err := fmt.Fprint(cmd.OutOrStdout(), versionText())
			return err
		},
	}
}

// versionText is what `cotal version` and `cotal --version` print.
func versionText() string {
	return fmt.Sprintf("cotal %s\nGo %s\nnats-server %s\n",
		cotalVersion(), strings.TrimPrefix(runtime.Version(), "go"), server.VERSION)
}

// cotalVersion is version, else the main module's version when the build recorded one, else
// "devel" with the commit the build's VCS info names (go build and go install . in a clone),
// marked "-dirty" for uncommitted changes.
func cotalVersion() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	rev := settings["vcs.revision"]
	if rev == "" {
		return "devel"
	}
	v := "devel+" + rev[:min(12, len(rev))]
	if settings["vcs.modified"] == "true" {
		v += "-dirty"
	}
	return v
}
