package bench

import (
	"context"
	"fmt"
	"slices"

	"github.com/cotal-go/cotal/broker"
)

const titleSync = "9. Sync modes"

// syncCases are rows 2 and 4 again on file storage in a temporary directory, under each of
// the broker's durability modes: fsync after every write, and fsync on the broker's interval.
// They run with the largest payload only: fsync per write makes them the slowest rows.
func syncCases(c Config) []Case {
	var out []Case
	for _, mode := range []broker.SyncMode{broker.SyncAlways, broker.SyncInterval} {
		o := envOptions{file: true, sync: mode}
		for _, size := range []int{slices.Max(c.Payloads)} {
			dm := fmt.Sprintf("DM, %s, file, sync %s", sizeName(size), mode)
			dur := fmt.Sprintf("durable 1→%d, %s, file, sync %s", durableMembers, sizeName(size), mode)
			out = append(out,
				Case{Name: dm, run: func(ctx context.Context, s *suite) ([]Row, error) {
					return s.queueCase(ctx, o, titleSync, dm, size, 1, s.cfg.DurableMessages)
				}},
				Case{Name: dur, run: func(ctx context.Context, s *suite) ([]Row, error) {
					return s.durableCase(ctx, o, titleSync, dur, size)
				}})
		}
	}
	return out
}
