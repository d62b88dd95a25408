package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cotal-go/cotal/internal/suggest"
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
		if most := len(required) + len(optional); len(args) > most {
			return fmt.Errorf("unexpected argument %q (%s takes at most %d); usage: %s", args[most], cmd.CommandPath(), most, cmd.UseLine())
		}
		return nil
	}
}

// finishGroups makes every command below root that only groups subcommands (auth, channels,
// deliver) refuse an unknown subcommand as a usage error with suggestions, as cobra does for
// root's own; without arguments it prints its help.
func finishGroups(root *cobra.Command) {
	for _, c := range root.Commands() {
		if c.HasSubCommands() && c.Run == nil && c.RunE == nil {
			c.Args = unknownSubcommand
			c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		}
		finishGroups(c)
	}
}

// unknownSubcommand refuses any argument of a group command, naming the close subcommands.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return errors.New(msg + suggest.DidYouMean(suggest.Close(args[0], names)))
}

// flagError adds the close flag names to cobra's "unknown flag" error.
func flagError(cmd *cobra.Command, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	cmd.InheritedFlags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	guesses := suggest.Close(name, names)
	if len(guesses) == 0 {
		return err
	}
	for i, g := range guesses {
		guesses[i] = "--" + g
	}
	return fmt.Errorf("%w%s", err, suggest.DidYouMean(guesses))
}
