// Package space starts and runs a whole cotal mesh in one process: the embedding API of
// ARCHITECTURE.md and the body of `cotal up`.
//
// Start opens (or creates) the key store in the data directory, starts the embedded broker in
// operator mode with every account preloaded, and for each space provisions the streams and KV
// buckets of SPEC §8 and docs/storage.md, writes the ACL records of every minted credential,
// pre-creates the bind-only dm_<id>, dlv_<id> and svc_<role> consumers of every active agent,
// and starts the durable backstop (package delivery). Each of these runs on its own scoped,
// in-process-only identity; no component holds an allow-all credential. Close stops it all in
// reverse order and leaves no goroutine, connection or temporary directory behind.
//
// A Go program hands its agents in-process Endpoints with Mesh.Endpoint (no TCP; their
// credentials never expire and are refused over TCP), issues credentials for remote agents
// with Mesh.Mint, and revokes them with Mesh.Revoke: a re-mint or revoke
// takes effect at once (SPEC §9 item 6). spacetest.New gives a test its own mesh in one line.
//
// Guarantees:
//   - Provisioning is idempotent and puts drifted settings back at every start; the
//     `=defaults` channel record is written once (SPEC §7) and then left to the operator.
//   - The presence bucket refuses rollups, per-message TTLs and message schedules, so no agent
//     can wipe other instances' presence or outlive the liveness TTL (docs/hostile-agents.md
//     "Presence cannot be wiped").
//   - On the node with the key store the trusted reader authorizes against the registry's
//     ACLs kept in memory here; the cotal_acl_<s> bucket, which only the provisioner writes
//     and no agent's answer can reach, serves a cluster node that runs the backstop without
//     the key store.
//   - Ready means ready: the client listener opens last, once every space is provisioned and
//     its delivery loops run, so a TCP client that reaches the port finds the mesh complete.
//   - While the mesh runs, bbolt's exclusive lock on the key store is held; other processes
//     administer it through the running Mesh (Mint, Revoke, ...), never by opening the store.
//   - Mesh.Done is closed when the mesh stops for any reason, and Mesh.Err names the cause
//     when the broker or JetStream died underneath it (etcd embed's shape).
//   - Health (Mesh.Health, /healthz) names every component that is down; /metrics exposes
//     message, backstop and endpoint counters (Options.HTTP).
//
// Not guaranteed: durable copies beyond retention (SPEC §4). By default a mesh is one broker
// on one machine. Options.Cluster makes it one node of a cluster that may span machines
// (docs/cluster.md): a stream keeps taking writes while a majority of its nodes is up, and
// minting and revoking need the node that holds the key store. Options.Leaf links it to a
// hub's mesh as a leaf node (docs/leaf.md): live chat, DMs and presence cross the link only
// while it is up, and nothing sent while it is down crosses later.
package space
