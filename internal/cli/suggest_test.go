package cli

import (
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		want time.Duration
		ok   bool
	}{
		{"hours", "12h", 12 * time.Hour, true},
		{"days", "7d", 7 * 24 * time.Hour, true},
		{"weeks", "1w", 7 * 24 * time.Hour, true},
		{"combined units add up", "1h30m", 90 * time.Minute, true},
		{"a negative lifetime is refused", "-1h", 0, false},
		{"zero is refused", "0h", 0, false},
		{"an unknown unit is refused", "5y", 0, false},
		{"Go's sub-second units are refused", "500ms", 0, false},
		{"an absurd count is refused", "99999999999999w", 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseDuration(c.in)
			if (err == nil) != c.ok || got != c.want {
				t.Fatalf("parseDuration(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
			}
		})
	}
}
