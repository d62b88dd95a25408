package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
)

// serverLogger implements server.Logger on top of slog. Notices log at Info, warnings at Warn,
// errors at Error, debug and trace lines at Debug. A fatal line logs at Error and raises the
// broker's fatal signal instead of exiting: nats-server's own loggers call os.Exit, which
// would take down the embedding program. Client refusal lines pass through violations, which
// rate-limits them per identity.
type serverLogger struct {
	log        *slog.Logger
	fatal      *fatalSignal
	violations *violationLimiter // nil logs every line
}

// Noticef logs at slog.LevelInfo.
func (l *serverLogger) Noticef(format string, v ...any) { l.emit(slog.LevelInfo, format, v) }

// Warnf logs at slog.LevelWarn.
func (l *serverLogger) Warnf(format string, v ...any) { l.emit(slog.LevelWarn, format, v) }

// Errorf logs at slog.LevelError.
func (l *serverLogger) Errorf(format string, v ...any) { l.emit(slog.LevelError, format, v) }

// Debugf logs at slog.LevelDebug; nats-server calls it only when Config.Debug is set.
func (l *serverLogger) Debugf(format string, v ...any) { l.emit(slog.LevelDebug, format, v) }

// Tracef logs at slog.LevelDebug; nats-server calls it only when Config.Trace is set.
func (l *serverLogger) Tracef(format string, v ...any) { l.emit(slog.LevelDebug, format, v) }

// Fatalf logs at slog.LevelError and raises the fatal signal; it never exits the process.
func (l *serverLogger) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.log.Error(msg, "fatal", true)
	l.fatal.raise(errors.New(msg))
}

func (l *serverLogger) emit(level slog.Level, format string, v []any) {
	ctx := context.Background()
	if !l.log.Enabled(ctx, level) {
		return
	}
	msg := fmt.Sprintf(format, v...)
	if level == slog.LevelError && l.violations != nil && !l.violations.admit(msg) {
		return
	}
	l.log.Log(ctx, level, msg)
}

// fatalSignal records the first fatal error nats-server reports. Raising never blocks, so
// it is safe from any nats-server goroutine, whatever locks that goroutine holds.
type fatalSignal struct {
	once sync.Once
	ch   chan struct{}
	err  error // written once before ch is closed
}

func newFatalSignal() *fatalSignal { return &fatalSignal{ch: make(chan struct{})} }

func (f *fatalSignal) raise(err error) {
	f.once.Do(func() {
		f.err = fmt.Errorf("%w: %w", ErrFatal, err)
		close(f.ch)
	})
}

// raised is closed once a fatal error has been reported.
func (f *fatalSignal) raised() <-chan struct{} { return f.ch }

// error returns the first fatal error, or nil.
func (f *fatalSignal) error() error {
	select {
	case <-f.ch:
		return f.err
	default:
		return nil
	}
}
