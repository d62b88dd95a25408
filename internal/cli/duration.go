package cli

import (
	"fmt"
	"strconv"
	"time"

	"github.com/cotal-go/cotal/config"
)

// durationUnits names the units of the one duration syntax (config.ParseDuration) that every
// duration flag and config key accepts.
const durationUnits = config.DurationUnits

// parseDuration reads a positive duration in config's one syntax: a flag's lifetime or window
// of zero means nothing useful, so zero is refused here.
func parseDuration(s string) (time.Duration, error) {
	d, err := config.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d <= 0 {
		return 0, fmt.Errorf("%w: %q: it must be positive, e.g. 1h or 7d", config.ErrBadDuration, s)
	}
	return d, nil
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
