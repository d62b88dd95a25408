package cli

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// durationUnits names the units of the one duration syntax every flag accepts.
const durationUnits = "s, m, h, d (24h) or w (7d), alone or combined as in 1h30m or 1w2d"

// durationPart is one count and unit of a duration; durationSyntax is a whole one.
var (
	durationPart   = regexp.MustCompile(`(\d+)([smhdw])`)
	durationSyntax = regexp.MustCompile(`^(\d+[smhdw])+$`)
)

var durationUnit = map[string]time.Duration{
	"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour, "w": 7 * 24 * time.Hour,
}

// errBadDuration: a duration flag's value is not in the one syntax, or is not positive.
var errBadDuration = errors.New("not a duration")

// parseDuration reads a positive duration in the syntax of durationUnits.
func parseDuration(s string) (time.Duration, error) {
	if rest, neg := strings.CutPrefix(s, "-"); neg && durationSyntax.MatchString(rest) {
		return 0, fmt.Errorf("%w: it must be positive, e.g. 1h or 7d", errBadDuration)
	}
	if !durationSyntax.MatchString(s) {
		return 0, fmt.Errorf("%w: use counts and units, %s", errBadDuration, durationUnits)
	}
	var total time.Duration
	for _, m := range durationPart.FindAllStringSubmatch(s, -1) {
		n, err := strconv.ParseInt(m[1], 10, 64)
		unit := durationUnit[m[2]]
		if err != nil || n > int64(math.MaxInt64/unit) || total > math.MaxInt64-time.Duration(n)*unit {
			return 0, fmt.Errorf("%w: too long", errBadDuration)
		}
		total += time.Duration(n) * unit
	}
	if total <= 0 {
		return 0, fmt.Errorf("%w: it must be positive, e.g. 1h or 7d", errBadDuration)
	}
	return total, nil
}

// replayWindowText writes d as SPEC §7's replayWindow, one count of the largest of d, h, m or s
// that divides it, so 1h30m is stored as 90m.
func replayWindowText(d time.Duration) string {
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}} {
		if d%u.unit == 0 {
			return strconv.FormatInt(int64(d/u.unit), 10) + u.name
		}
	}
	return strconv.FormatInt(int64(d/time.Second), 10) + "s"
}
