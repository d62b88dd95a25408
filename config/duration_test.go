package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cotal-go/cotal/space"
)

func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		want time.Duration
		ok   bool
	}{
		{"seconds", "90s", 90 * time.Second, true},
		{"days", "7d", 7 * 24 * time.Hour, true},
		{"weeks", "1w", 7 * 24 * time.Hour, true},
		{"combined units add up", "1w2d3h4m5s", 9*24*time.Hour + 3*time.Hour + 4*time.Minute + 5*time.Second, true},
		{"what time.Duration prints reads back", "168h0m0s", 168 * time.Hour, true},
		{"a bare zero is zero", "0", 0, true},
		{"a negative duration is refused", "-1h", 0, false},
		{"an unknown unit is refused", "5y", 0, false},
		{"Go's sub-second units are refused", "500ms", 0, false},
		{"a fraction is refused", "1.5h", 0, false},
		{"a count without a unit is refused", "3600", 0, false},
		{"an empty value is refused", "", 0, false},
		{"an absurd count is refused", "99999999999999w", 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseDuration(c.in)
			if (err == nil) != c.ok || got != c.want {
				t.Fatalf("ParseDuration(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
			}
			if err != nil && (!errors.Is(err, ErrBadDuration) || !strings.Contains(err.Error(), "w (7d)") && !strings.Contains(err.Error(), "too long")) {
				t.Fatalf("error %q does not wrap ErrBadDuration naming the allowed units", err)
			}
		})
	}
}

// FuzzParseDuration checks that any input either fails or yields a non-negative duration that
// FormatDuration writes back readably and that agrees with time.ParseDuration wherever both
// syntaxes accept it.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"0", "1w2d", "90s", "1h30m", "-1h", "500ms", "1.5h", "99999999999999w", "168h0m0s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			if !errors.Is(err, ErrBadDuration) {
				t.Fatalf("ParseDuration(%q): %v does not wrap ErrBadDuration", s, err)
			}
			return
		}
		if d < 0 {
			t.Fatalf("ParseDuration(%q) = %v, negative", s, d)
		}
		if back, err := ParseDuration(FormatDuration(d)); err != nil || back != d {
			t.Fatalf("ParseDuration(FormatDuration(%v)) = %v, %v; want it back", d, back, err)
		}
		if !strings.ContainsAny(s, "dw") {
			if want, err := time.ParseDuration(s); err == nil && want != d {
				t.Fatalf("ParseDuration(%q) = %v, time.ParseDuration says %v", s, d, want)
			}
		}
	})
}

func TestFormatDurationWritesTheOneSyntax(t *testing.T) {
	for _, c := range []struct {
		in   time.Duration
		want string
	}{
		{0, "0"}, {10 * time.Second, "10s"}, {90 * time.Second, "1m30s"}, {2 * time.Minute, "2m"},
		{24 * time.Hour, "1d"}, {36 * time.Hour, "1d12h"}, {9 * 24 * time.Hour, "1w2d"},
		{1500 * time.Millisecond, "1.5s"},
	} {
		if got := FormatDuration(c.in); got != c.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestEveryDurationKeyTakesTheOneSyntax(t *testing.T) {
	tests := []struct {
		name, file string
		env        []string
		check      func(space.Options) bool
		wantErr    string
	}{
		{name: "expiry in weeks from the file", file: "expiry: 2w\n",
			check: func(c space.Options) bool { return c.Expiry == 14*24*time.Hour }},
		{name: "sync_interval in days from the environment", env: []string{"COTAL_SYNC=interval", "COTAL_SYNC_INTERVAL=1d"},
			check: func(c space.Options) bool { return c.SyncInterval == 24*time.Hour }},
		{name: "violation_log_interval of a bare 0 logs every refusal", file: "limits:\n  violation_log_interval: 0\n",
			check: func(c space.Options) bool { return c.Limits.ViolationLogInterval < 0 }},
		{name: "a number without a unit is refused, naming the units", file: "expiry: 3600\n",
			wantErr: "3600 has no unit; use counts and units, s, m, h, d (24h) or w (7d)"},
		{name: "an unknown unit names the allowed ones", file: "sync_interval: 1y\n",
			wantErr: `"1y"; use counts and units, s, m, h, d (24h) or w (7d)`},
		{name: "an unknown unit in the environment names the layer", env: []string{"COTAL_EXPIRY=2 days"},
			wantErr: "COTAL_* environment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.file != "" {
				if err := os.WriteFile(filepath.Join(dir, FileName), []byte(tt.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			c, err := Load(LoadOptions{Dir: dir, Env: append([]string{"HOME=" + dir}, tt.env...)})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrBadDuration) {
					t.Fatalf("Load = %v, want an error wrapping ErrBadDuration with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !tt.check(c) {
				t.Fatalf("Load = %+v, %v", c, err)
			}
		})
	}
}
