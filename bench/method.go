package bench

// method is BENCHMARKS.md's "How to read it" section.
const method = `## How to read it

Every row is measured for cotal and for raw nats.go doing the same work on the same embedded
nats-server in the same run, both sides over in-process connections (no TCP). The two sides of
a case alternate, run after run, so neither always runs on the warmer server. Each figure is
the median over the runs with the spread (min–max) in brackets; this machine is shared with
other work, so the ratio cotal/raw is the figure that counts, and "process CPU per message"
(CPU time of the whole process, broker included, over the throughput run) says what a message
costs even when other load stretches wall time.

- **Fairness.** The data-path rows (1–5, 9) run on an *open* mesh: cotal's own streams,
  buckets and delivery service, and every connection, cotal's and raw's, in the same account
  with the same privileges. On the authenticated mesh the raw side would have no account in
  which to create its own streams without borrowing the mesh's own credentials, and every
  channel would stay durable (the authenticated default, SPEC §7) because only privileged
  identities write the channel registry. A privileged connection does the provisioner's part
  for cotal's instances (the bind-only consumers of SPEC §8) and sets each channel's class.
  The authentication cost this leaves out is per connection (JWT verification) and a cached
  per-subject permission check per publish. Rows 6–8 run on the *authenticated* mesh, the real
  product: minted credentials, the broker enforcing Appendix B.
- **Payloads** are text of the stated size. cotal carries it as one text part inside its
  envelope (SPEC §5): built, validated, JSON-encoded and published with Nats-Msg-Id, then
  parsed, checked and deduplicated by every receiver. Raw carries the bare bytes. The envelope
  is cotal's cost and is measured as such.
- **Raw counterparts.** Multicast: JetStream publish to a stream configured like CHAT, core
  subscriptions. DM: JetStream publish, a durable pull consumer with explicit acks (nats.go's
  default Consume). Anycast: a work-queue stream, one pull consumer shared by four workers.
  Durable channel: a stream like CHAT, one pull consumer per member with explicit acks; both
  sides keep the publisher at most 500 messages ahead of the stage that reads the retained
  stream (cotal's fan-out, raw's consumers), because CHAT keeps 1000 messages per subject.
  Backfill: an ordered consumer replaying the same number of messages. Per-test space: an
  embedded nats-server with JetStream, two connections, one memory stream, shutdown. Presence:
  one connection putting the fleet's keys at the fleet's heartbeat rate into a KV bucket with
  the presence TTL. Memory: bare in-process connections.
- **Raw + encoding/json** (rows 1–5 and 9) is a second raw baseline: the same raw counterpart
  carrying cotal's encoded envelope instead of the bare text, each receiver decoding it with
  the standard library's encoding/json into a plain struct. It shows what hand-rolled NATS
  carrying the same messages would pay. The ratio column stays cotal/raw; a target marked
  "of raw+json" is judged on cotal/raw+json, the comparison a user choosing between cotal and
  hand-rolled NATS makes.
- **Definitions.** Throughput runs publish asynchronously and stop the clock when the last copy
  is surfaced (multicast), or surfaced and the consumer holds nothing unacked (DM, anycast,
  durable: every member's DLV consumer). Latency is publish call to Handler, one message in
  flight. Backstop lag is the time from the last publish acknowledgement to the last durable
  copy acked. Presence CPU is the process's CPU time over three heartbeats (6 s) once every
  roster has converged, as a percentage of one core; convergence is the time from the start
  of a burst of connects until every endpoint's roster lists every endpoint online. Memory is
  the live heap growth after GC divided by the number of endpoints, broker side included.
  Presence and memory run at the fleet sizes that fit on this machine (the presence target is
  stated for 1 000 endpoints; row 6's note says why 1 000 do not fit).
- **Cluster (row 11)** compares cotal with cotal: the cotal column is DM from an agent on node
  1 to an agent on node 3 of a three-node cluster started in this process (routes on loopback,
  R3 memory streams, the key store on node 1), the raw column the same DM workload on one
  authenticated memory node. Both sides' agents are minted credentials connected over
  loopback TCP, the way a cluster's agents connect. cotal/raw is cluster/single: what
  replicating every DM to three nodes and crossing two routes costs. Process CPU counts all
  three nodes.
- **The user's path (row 12)** is what an agent of ` + "`cotal up`" + ` meets: the mesh runs as
  ` + "`cotal up`" + ` in a process of its own (file storage, the sync mode the case names, a
  fresh data directory per case), and both sides connect over loopback TCP with credentials it
  minted through its admin socket. The raw side is nats.go alone with the same kind of
  credential on the same streams and consumers: it publishes its body where cotal publishes
  its envelope, subscribes to the channel's live subject, and consumes ` + "`dm_<id>`" + ` and
  ` + "`svc_<role>`" + ` with explicit acks. Its throughput runs send five times the messages of
  rows 1–3, at most 1 000 awaiting their acknowledgement, so that a run lasts long enough for
  steady CPU figures and a sender paced by fsync never meets the bound of 4 000 unacknowledged
  sends. Client CPU is this process's (every sender and
  receiver, no broker); mesh CPU is the ` + "`cotal up`" + ` process's, read from
  /proc/PID/stat to the 10 ms tick, so a figure below 10 ms over the run's messages is coarse.
  The sustained DM case asks whether a receiver keeps up with a busy sender: one cotal sender
  sends a burst of DMs with 8 sends in flight, each awaiting its acknowledgement, to a fresh
  receiver, and the row counts what the receiver surfaced 5 s after the burst began (sooner if
  it surfaced all of it), beside what was stored by then and the share of that it surfaced,
  and the longest it went without a new DM, the wait still open at the end included. The
  surfaced count also follows how fast the sender stores, which the receiver's own CPU slows
  on a machine whose cores the sender, the receiver and the mesh share; the share is the
  receiver's alone. Raw receives with nats.go's default
  Consume, pulls of 500.
- **No row against the reference implementation's broker.** The v0.3-era reference client
  that cotal interoperates with (package 0.9.0) ships no benchmark script to run against both
  brokers, so there is nothing of its own to compare with; rows 1–12 compare cotal with
  nats.go doing the same work instead.
- **How far apart two runs are.** On this shared two-core machine one side's figures move by
  10–20 % from run to run, and more in the first run of a process; a ratio of two medians
  moves by 0.2–0.3 between regenerations of the same code (row 12 most). Compare two
  builds by running them alternately, several times each, not by two files.
`
