package chaos_test

import "time"

// tierParams sizes every chaos test. The short tier (tier_short_test.go) keeps `make test`
// fast; the long tier (tier_long_test.go, -tags chaos) gives the figures of RELIABILITY.md.
type tierParams struct {
	name string

	// Crash the mesh (SPEC §4, §8): kill -9 meshKills times, killGap apart, while publishers
	// publish without pause; publisherKills of them are killed mid-run too.
	meshKills      int
	killGap        [2]time.Duration
	publishers     int
	publisherKills int
	// receiverCrashes crashes receiver processes inside their Handler while one publisher sends
	// perPublisher messages; each crash costs a consumer ack wait (60 s, docs/storage.md
	// "Consumers") before the redelivery, so the short tier runs none.
	receiverCrashes int
	perPublisher    int
	// restarts of the mesh under connected endpoints, each timed to recovery.
	restarts int

	// Load (SPEC §7, §9): loadEndpoints agents act at random for loadFor, with remints
	// narrowing re-mints.
	loadEndpoints int
	loadFor       time.Duration
	remints       int

	// Slow consumers: slowMessages messages of slowPayload bytes past a stalled receiver.
	slowMessages int
	slowPayload  int

	// Cluster member kill: a node without the key store is killed clusterKills times, each time
	// down for clusterOutage while publishers go on through the survivors.
	clusterKills  int
	clusterOutage time.Duration
	// backstopKill kills the key-store node, which runs the backstop, for at least
	// clusterOutage: the lease moves after 5 s, its unacknowledged fan-out after a 60 s ack
	// wait.
	backstopKill bool
	// partitionFor cuts one node off from the other two, once, for this long; 0 skips it.
	partitionFor time.Duration

	// leakMeshes meshes are started and closed under goleak.
	leakMeshes int

	// drain bounds the wait for every acknowledged publish to surface. It exceeds the 60 s
	// ack wait, which a copy delivered to a connection a crash took away must sit out.
	drain time.Duration
}
