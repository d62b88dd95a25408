//go:build chaos

package chaos_test

import "time"

// tier is the long tier of `make chaos`: the figures of RELIABILITY.md.
var tier = tierParams{
	name:            "long",
	meshKills:       24,
	killGap:         [2]time.Duration{300 * time.Millisecond, 2 * time.Second},
	publishers:      3,
	perPublisher:    900,
	publisherKills:  4,
	receiverCrashes: 6,
	restarts:        8,
	loadEndpoints:   50,
	loadFor:         45 * time.Second,
	remints:         12,
	slowMessages:    1600,
	slowPayload:     32 << 10,
	clusterKills:    3,
	backstopKill:    true,
	partitionFor:    15 * time.Second,
	clusterOutage:   10 * time.Second,
	leakMeshes:      100,
	drain:           150 * time.Second,
}
