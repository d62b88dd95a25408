package broker

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/cotal-go/cotal/internal/await"
)

const (
	levelDebug = slog.LevelDebug
	levelInfo  = slog.LevelInfo
	levelWarn  = slog.LevelWarn
	levelError = slog.LevelError
)

// recorder is a slog.Handler that keeps every record, for asserting on what was logged.
type recorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *recorder) logger() *slog.Logger { return slog.New(r) }

// Enabled records every level, Debug included.
func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }

// Handle keeps a copy of rec.
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec.Clone())
	return nil
}

// WithAttrs returns r: the tests read messages and levels only.
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }

// WithGroup returns r: the tests read messages and levels only.
func (r *recorder) WithGroup(string) slog.Handler { return r }

// has reports whether a record at level contains text.
func (r *recorder) has(level slog.Level, text string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range r.records {
		if rec.Level == level && strings.Contains(rec.Message, text) {
			return true
		}
	}
	return false
}

// snapshot returns a copy of the records so far.
func (r *recorder) snapshot() []slog.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]slog.Record(nil), r.records...)
}

func (r *recorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.records))
	for _, rec := range r.records {
		out = append(out, rec.Level.String()+" "+rec.Message)
	}
	return out
}

func TestServerLoggerMapsLevels(t *testing.T) {
	tests := []struct {
		name  string
		call  func(*serverLogger)
		level slog.Level
	}{
		{"a notice logs at info", func(l *serverLogger) { l.Noticef("n %d", 1) }, levelInfo},
		{"a warning logs at warn", func(l *serverLogger) { l.Warnf("n %d", 1) }, levelWarn},
		{"an error logs at error", func(l *serverLogger) { l.Errorf("n %d", 1) }, levelError},
		{"a debug line logs at debug", func(l *serverLogger) { l.Debugf("n %d", 1) }, levelDebug},
		{"a trace line logs at debug", func(l *serverLogger) { l.Tracef("n %d", 1) }, levelDebug},
		{"a fatal line logs at error", func(l *serverLogger) { l.Fatalf("n %d", 1) }, levelError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			tc.call(&serverLogger{log: rec.logger(), fatal: newFatalSignal()})
			if !rec.has(tc.level, "n 1") {
				t.Errorf("log = %v, want %v \"n 1\"", rec.lines(), tc.level)
			}
		})
	}
}

func TestServerLoggerFatalRaisesInsteadOfExiting(t *testing.T) {
	sig := newFatalSignal()
	l := &serverLogger{log: slog.New(slog.DiscardHandler), fatal: sig}
	l.Fatalf("first %s", "failure")
	l.Fatalf("second failure")

	select {
	case <-sig.raised():
	default:
		t.Fatal("Fatalf did not raise the fatal signal")
	}
	if err := sig.error(); !errors.Is(err, ErrFatal) || !strings.Contains(err.Error(), "first failure") {
		t.Errorf("fatal error = %v, want ErrFatal carrying the first failure", err)
	}
}

func TestServerLogsReachSlog(t *testing.T) {
	tt := newTestTrust(t)
	rec := &recorder{}
	cfg := operatorConfig(tt)
	cfg.Logger = rec.logger()
	b := startBroker(t, cfg)

	t.Run("a server warning is routed at warn", func(t *testing.T) {
		b.Server().Warnf("disk nearly %s", "full")
		if !rec.has(levelWarn, "disk nearly full") {
			t.Errorf("log = %v, want the warning", rec.lines())
		}
	})
	t.Run("a refused client is logged at error", func(t *testing.T) {
		refused(t, b, mintUser(t, tt.appPub, newKey(t, nkeys.CreateAccount), "mallory", nil).option())
		await.Check(t, 10*time.Second, 10*time.Millisecond, func() error {
			if rec.has(levelError, "authentication error") {
				return nil
			}
			return errNotYet
		})
	})
	t.Run("debug lines stay off by default", func(t *testing.T) {
		b.Server().Debugf("debug probe")
		if rec.has(levelDebug, "debug probe") {
			t.Error("a debug line was logged although Config.Debug is false")
		}
	})
}

func TestAFatalStartErrorFailsStartWithoutExiting(t *testing.T) {
	cfg := operatorConfig(newTestTrust(t))
	cfg.Listen = occupiedAddr(t)
	b, err := Start(context.Background(), cfg)
	if err == nil {
		shutdown(t, b)
		t.Fatal("Start succeeded on a port already in use")
	}
	if !errors.Is(err, ErrFatal) {
		t.Errorf("Start error = %v, want ErrFatal", err)
	}
}

func TestAFatalErrorAtRunTimeShutsTheServerDown(t *testing.T) {
	b := startBroker(t, operatorConfig(newTestTrust(t)))
	b.Server().Fatalf("simulated %s", "disaster")

	await.Check(t, 30*time.Second, 10*time.Millisecond, func() error {
		if b.Server().Running() {
			return errNotYet
		}
		return nil
	})
	if err := b.Healthy(); !errors.Is(err, ErrFatal) || !strings.Contains(err.Error(), "simulated disaster") {
		t.Errorf("Healthy = %v, want ErrFatal naming the failure", err)
	}
}

// occupiedAddr returns a loopback address that a listener holds until the test ends.
func occupiedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l.Addr().String()
}
