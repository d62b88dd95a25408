package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/cotal-go/cotal/internal/termsafe"
	"github.com/cotal-go/cotal/space"
)

// Exit codes of run.
const (
	exitOK    = 0 // the command succeeded, or help was asked for
	exitError = 1 // the command ran and failed
	exitUsage = 2 // the command line was wrong; nothing ran
)

// Run executes the command line args and returns the process exit code (exitOK, exitError or
// exitUsage, as `cotal help exit-codes` documents). Commands see a context cancelled on SIGINT
// or SIGTERM.
func Run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return execute(ctx, newRootCmd(stdout, stderr), args, stderr)
}

// newRootCmd builds the cotal command tree writing to stdout and stderr.
func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	var logFormat, logLevel string
	root := &cobra.Command{
		Use:   "cotal",
		Short: "Run a Cotal mesh where AI agents coordinate as peers",
		Long: `cotal runs a Cotal (wire protocol v0.3) mesh in a single binary: an embedded NATS
server with JetStream and per-agent credentials, over which AI agents coordinate through
channels, direct messages, services and presence.`,
		SilenceErrors: true, // execute prints errors, prefixed with "cotal:"
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkLogFlags(logFormat, logLevel); err != nil {
				return err
			}
			return checkSpaceFlag(cmd)
		},
	}
	root.Version = cotalVersion()
	root.SetVersionTemplate(versionText())
	root.SetOut(stdout)
	root.SetErr(stderr)
	flags := root.PersistentFlags()
	flags.StringVar(&logFormat, "log-format", "text", "log format: text or json (config key log.format)")
	flags.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error (config key log.level)")
	addCommands(root)
	registerCompletions(root)
	finishGroups(root)
	root.SetFlagErrorFunc(flagError)
	return root
}

// addCommands is where every subcommand is registered.
func addCommands(root *cobra.Command) {
	root.AddCommand(newVersionCmd(), newUpCmd(), newAuthCmd(), newSendCmd(), newTailCmd(), newWhoCmd(),
		newChannelsCmd(), newHistoryCmd(), newStatusCmd(), newDeliverCmd(), newLinkCmd(), newConfigCmd(), newExitCodesTopic(), newBenchCmd(), newMCPCmd(), newContextCmd(), newPersonasCmd(), newSpawnCmd(),
		newStartCmd(), newPsCmd(), newStopCmd(), newLogsCmd())
}

// execute runs root with args and maps the outcome to an exit code: an error from a command's
// RunE is exitError; any other error is cobra refusing the command line, exitUsage.
func execute(ctx context.Context, root *cobra.Command, args []string, stderr io.Writer) int {
	markRunErrors(root)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	// An error can quote what a peer chose (a name, a channel's registry entry): escaped.
	fmt.Fprintf(stderr, "cotal: %s\n", termsafe.Text(strings.TrimRight(err.Error(), "\n")))
	if errors.As(err, new(runError)) {
		return exitError
	}
	fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	return exitUsage
}

// runError marks an error returned by a command's RunE, as opposed to a usage error.
type runError struct{ err error }

func (e runError) Error() string { return e.err.Error() }
func (e runError) Unwrap() error { return e.err }

// markRunErrors wraps the RunE of c and of every command below it in runError.
func markRunErrors(c *cobra.Command) {
	if runE := c.RunE; runE != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if err := runE(cmd, args); err != nil {
				return runError{err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		markRunErrors(sub)
	}
}

// logLevels are the accepted --log-level values, as config.Validate accepts them.
var logLevels = map[string]slog.Level{
	"debug": slog.LevelDebug,
	"info":  slog.LevelInfo,
	"warn":  slog.LevelWarn,
	"error": slog.LevelError,
}

// checkLogFlags refuses a --log-format or --log-level that newLogger would not honour.
func checkLogFlags(format, level string) error {
	if format != "text" && format != "json" {
		return fmt.Errorf("--log-format %q: use text or json", format)
	}
	if _, ok := logLevels[level]; !ok {
		return fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	return nil
}

// newLogger returns a logger writing to w as space.LogOptions.Logger builds it: JSON lines when
// format is "json", otherwise text. An unknown level logs at info.
func newLogger(format, level string, w io.Writer) *slog.Logger {
	return space.LogOptions{Format: format, Level: level}.Logger(w)
}
