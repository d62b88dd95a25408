package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// DurationUnits names the units of cotal's one duration syntax, which every duration key of
// the configuration (cotal.yaml, COTAL_* and flags) and every duration flag of the commands
// accept.
const DurationUnits = "s, m, h, d (24h) or w (7d), alone or combined as in 1h30m or 1w2d"

// ErrBadDuration is wrapped by every error ParseDuration returns.
var ErrBadDuration = errors.New("not a duration")

// durationPart is one count and unit of a duration; durationSyntax is a whole one.
var (
	durationPart   = regexp.MustCompile(`(\d+)([smhdw])`)
	durationSyntax = regexp.MustCompile(`^(\d+[smhdw])+$`)
)

var durationUnit = map[string]time.Duration{
	"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour, "w": 7 * 24 * time.Hour,
}

// ParseDuration reads a duration in the syntax DurationUnits names, or "0". The result is
// never negative; a caller that needs a positive or longer one says so itself (Validate, the
// commands' flags). Errors wrap ErrBadDuration and name the allowed units.
func ParseDuration(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	if rest, neg := strings.CutPrefix(s, "-"); neg && durationSyntax.MatchString(rest) {
		return 0, fmt.Errorf("%w: %q: it must be positive (or 0), counts with %s", ErrBadDuration, s, DurationUnits)
	}
	if !durationSyntax.MatchString(s) {
		return 0, fmt.Errorf("%w: %q; use counts and units, %s", ErrBadDuration, s, DurationUnits)
	}
	var total time.Duration
	for _, m := range durationPart.FindAllStringSubmatch(s, -1) {
		n, err := strconv.ParseInt(m[1], 10, 64)
		unit := durationUnit[m[2]]
		if err != nil || n > int64(math.MaxInt64/unit) || total > math.MaxInt64-time.Duration(n)*unit {
			return 0, fmt.Errorf("%w: %q is too long", ErrBadDuration, s)
		}
		total += time.Duration(n) * unit
	}
	return total, nil
}

// durationUnitsDesc are the units of the syntax, largest first, as FormatDuration writes them.
var durationUnitsDesc = []struct {
	name string
	unit time.Duration
}{{"w", 7 * 24 * time.Hour}, {"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}}

// FormatDuration writes d in the syntax ParseDuration reads, largest units first ("1w2d",
// "90s" as "1m30s", 0 as "0"), so what `cotal config` prints can be pasted back. A negative or
// sub-second d, which no configuration layer can produce, is written as time.Duration does.
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	if d < 0 || d%time.Second != 0 {
		return d.String()
	}
	var b strings.Builder
	for _, u := range durationUnitsDesc {
		if n := d / u.unit; n > 0 {
			b.WriteString(strconv.FormatInt(int64(n), 10) + u.name)
			d -= n * u.unit
		}
	}
	return b.String()
}

// durationHook decodes every time.Duration key with ParseDuration. A bare number other than
// 0 is refused rather than read as nanoseconds, which is what `expiry: 3600` would otherwise
// mean.
func durationHook(_, to reflect.Type, data any) (any, error) {
	if to != reflect.TypeFor[time.Duration]() {
		return data, nil
	}
	switch v := data.(type) {
	case string:
		return ParseDuration(v)
	case time.Duration:
		return v, nil
	}
	if v := reflect.ValueOf(data); v.CanInt() && v.Int() == 0 || v.CanUint() && v.Uint() == 0 ||
		v.CanFloat() && v.Float() == 0 {
		return time.Duration(0), nil
	}
	return nil, fmt.Errorf("%w: %v has no unit; use counts and units, %s", ErrBadDuration, data, DurationUnits)
}
