package config

import (
	"io"
	"log/slog"
)

// logLevels are the log.level values Validate accepts and the slog levels they select.
var logLevels = map[string]slog.Level{
	"debug": slog.LevelDebug,
	"info":  slog.LevelInfo,
	"warn":  slog.LevelWarn,
	"error": slog.LevelError,
}

// Logger returns a logger writing to w in l's format at l's level: JSON lines for "json",
// otherwise slog's key=value text, which reads well on a terminal. A level Validate would
// refuse logs at info, so an unvalidated Log still yields a working logger.
func (l Log) Logger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: logLevels[l.Level]}
	if l.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
