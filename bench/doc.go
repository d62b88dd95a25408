// Package bench measures cotal against raw nats.go doing the same work on the same embedded
// server in the same run, so that the ratio cotal/raw, not the absolute figure, is what a
// noisy shared machine reports faithfully.
//
// Each workload runs its cotal side and its raw side back to back, alternating which goes
// first, on one mesh started for that workload case. Every figure is the median of
// Config.Runs runs with the spread (min–max) beside it. The workloads are the eleven row
// groups of BENCHMARKS.md: live multicast, DM, anycast, durable channel, join with backfill,
// presence, per-test space, memory per endpoint, the two file-storage sync modes, the
// durableJoin round trip under concurrent joins, which has no raw side (raw NATS has no
// durable membership) and is judged against absolute budgets, and DM through a three-node
// cluster, whose two sides are both cotal: the cluster in the cotal column, one node in the
// raw column, so that its ratio is cluster/single.
//
// # Fairness
//
// The data-path workloads (multicast, DM, anycast, durable channel, backfill, sync modes,
// durable join) run on an open mesh: cotal's own streams, buckets and delivery service, with
// every connection, cotal's and raw's, an in-process connection to the same server in the
// same account with the same privileges. An authenticated mesh would give the raw side no
// account in which to create its own streams short of the mesh's own credentials, and it
// would keep a channel's class at the authenticated default (durable, SPEC §7), since only
// privileged identities write the channel registry. A privileged connection plays the
// provisioner's part for the cotal side as the mesh does at mint (the bind-only consumers of
// SPEC §8) and sets each channel's class in the registry. Presence, memory and the per-test
// space run on the authenticated mesh, the real product: minted credentials, the broker
// enforcing Appendix B.
//
// Payloads are text of the stated size. cotal carries it as one text part inside its
// envelope (SPEC §5), validated, encoded and published with Nats-Msg-Id; raw carries the bare
// bytes. The envelope is cotal's cost and is measured as such.
//
// Nothing here asserts on speed: the figures are for BENCHMARKS.md (`cotal bench`) and the
// Go benchmarks of this package.
package bench
