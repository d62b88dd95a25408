package broker

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cotal-go/cotal/internal/await"
)

// violationLine is a publish refusal as nats-server logs it for an authenticated client.
func violationLine(user, subject string) string {
	return fmt.Sprintf(`pipe - cid:7 - "v1.55.0:go" - "ACCT/nkey:%s" - Publish Violation - Subject %q`, user, subject)
}

// 20 000 refusals of one identity write a bounded number of lines, none of them lost: the
// full lines plus the summaries' counts add up to 20 000.
func TestViolationLinesAreRateLimitedPerIdentity(t *testing.T) {
	const every = time.Second
	rec := &recorder{}
	v := newViolationLimiter(rec.logger(), every)
	l := &serverLogger{log: rec.logger(), fatal: newFatalSignal(), violations: v}
	start := time.Now()
	for i := range 20000 {
		l.Errorf("%s", violationLine("UMALLORY", fmt.Sprintf("denied.%d", i)))
	}
	elapsed := time.Since(start)
	l.Errorf("%s", violationLine("UALICE", "denied.x"))
	l.Errorf("stream %s failed", "X")
	await.Check(t, 10*time.Second, 10*time.Millisecond, func() error {
		if !rec.has(levelError, "held back") {
			return errNotYet
		}
		return nil
	})
	v.stop()

	tests := []struct {
		name string
		ok   func() bool
	}{
		{"the first refusal of an identity logs in full", func() bool { return rec.has(levelError, `Subject "denied.0"`) }},
		{"another identity's first refusal still logs", func() bool { return rec.has(levelError, "UALICE") }},
		{"an error that is no refusal is never held back", func() bool { return rec.has(levelError, "stream X failed") }},
		{"the held-back refusals are summarised", func() bool { return rec.has(levelError, "client refusals held back: Publish Violation") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.ok() {
				t.Fatalf("log = %v", rec.lines())
			}
		})
	}
	full, counted := 0, int64(0)
	for _, r := range rec.snapshot() {
		switch {
		case strings.Contains(r.Message, "UMALLORY"):
			full++
		case strings.Contains(r.Message, "held back"):
			r.Attrs(func(a slog.Attr) bool {
				if a.Key == "count" {
					counted += a.Value.Int64()
				}
				return true
			})
		}
	}
	windows := int(elapsed/every) + 1
	if full+int(counted) != 20000 || full > windows {
		t.Errorf("%d full lines and %d counted in summaries over %v; want 20 000 in all and at most %d full lines",
			full, counted, elapsed, windows)
	}
}

func TestStoppingTheLimiterFlushesItsSummaries(t *testing.T) {
	rec := &recorder{}
	v := newViolationLimiter(rec.logger(), time.Hour)
	for range 3 {
		if v.admit(violationLine("UMALLORY", "x")) {
			rec.logger().Error("admitted")
		}
	}
	v.stop()
	if !rec.has(levelError, "held back") || len(rec.lines()) != 2 {
		t.Fatalf("after stop the log is %v, want the first line and one summary", rec.lines())
	}
}
