//go:build !chaos

package chaos_test

import "time"

// tier is the short tier: it runs in `make test` within about a minute on two loaded cores.
var tier = tierParams{
	name:            "short",
	meshKills:       3,
	killGap:         [2]time.Duration{400 * time.Millisecond, 1200 * time.Millisecond},
	publishers:      2,
	perPublisher:    0,
	publisherKills:  1,
	receiverCrashes: 0,
	restarts:        2,
	loadEndpoints:   8,
	loadFor:         4 * time.Second,
	remints:         2,
	slowMessages:    600,
	slowPayload:     16 << 10,
	clusterKills:    0,
	backstopKill:    false,
	partitionFor:    0,
	clusterOutage:   0,
	leakMeshes:      10,
	drain:           90 * time.Second,
}
