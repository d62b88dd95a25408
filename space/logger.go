package space

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
)

// LogOptions select the format and level of a log (Options.Log).
type LogOptions struct {
	// Format is "text" (slog's key=value, the loader's default) or "json".
	Format string `koanf:"format"`
	// Level is "debug", "info" (the loader's default), "warn" or "error".
	Level string `koanf:"level"`
}

// logLevels are the Level values Validate accepts and the slog levels they select.
var logLevels = map[string]slog.Level{
	"debug": slog.LevelDebug,
	"info":  slog.LevelInfo,
	"warn":  slog.LevelWarn,
	"error": slog.LevelError,
}

// Logger returns a logger writing to w in l's format at l's level: JSON lines for "json",
// otherwise slog's key=value text, which reads well on a terminal. A level Validate would
// refuse logs at info, so an unvalidated LogOptions still yields a working logger.
func (l LogOptions) Logger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: logLevels[l.Level]}
	if l.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// Validate reports a format or level that is not one of those listed on LogOptions, naming
// its key in cotal.yaml (log.format, log.level).
func (l LogOptions) Validate() error {
	var errs []error
	if l.Format != "text" && l.Format != "json" {
		errs = append(errs, fmt.Errorf("log.format: %q is not a log format; use text or json", l.Format))
	}
	if _, ok := logLevels[l.Level]; !ok {
		errs = append(errs, fmt.Errorf("log.level: %q is not a log level; use debug, info, warn or error", l.Level))
	}
	return errors.Join(errs...)
}
