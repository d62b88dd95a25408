package cli

import (
	"context"
	"time"

	"log/slog"

	"github.com/spf13/cobra"

	"github.com/cotal-go/cotal/config"
)

// loggerFor builds the process logger: --log-format/--log-level when given on the command
// line, else the config's log settings. Logs go to stderr so stdout stays for results.
func loggerFor(cmd *cobra.Command, cfg config.Config) *slog.Logger {
	format, level := cfg.Log.Format, cfg.Log.Level
	if f := cmd.Flag("log-format"); f != nil && f.Changed {
		format = f.Value.String()
	}
	if f := cmd.Flag("log-level"); f != nil && f.Changed {
		level = f.Value.String()
	}
	return newLogger(format, level, cmd.ErrOrStderr())
}

// newTimeoutContext is the context for shutdown work after the command's own context ended.
func newTimeoutContext(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
