package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// exactArgs accepts exactly the named positional arguments; a missing or extra one is a
// usage error that says which.
func exactArgs(names ...string) cobra.PositionalArgs {
	return rangeArgs(names, nil)
}

// rangeArgs accepts the required arguments, then up to len(optional) more; a missing or extra
// one is a usage error that says which.
func rangeArgs(required, optional []string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < len(required) {
			return fmt.Errorf("missing argument %s; usage: %s", strings.Join(required[len(args):], " and "), cmd.UseLine())
		}
		if max := len(required) + len(optional); len(args) > max {
			return fmt.Errorf("unexpected argument %q (%s takes at most %d); usage: %s", args[max], cmd.CommandPath(), max, cmd.UseLine())
		}
		return nil
	}
}
