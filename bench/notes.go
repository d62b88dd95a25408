package bench

// notes say, per workload, what bounds a row that misses its target. BENCHMARKS.md prints
// the note of every workload with a missed row. They come from CPU profiles of these
// workloads (go test -bench -cpuprofile, pprof top) on this machine.
var notes = map[string]string{
	titleMulticast: "Per message cotal does more broker work than raw and JSON on both ends. The " +
		"publisher builds, validates and encodes the envelope and stores it with Nats-Msg-Id (a " +
		"duplicate-window entry); the broker also delivers every CHAT message to the delivery " +
		"service's fan-out consumer and takes its ack; and every subscriber runs SPEC §5's receive " +
		"checks (`wire.CheckDelivery`: subject parse, one-pass decode and validation) and claims " +
		"the id in the dedup window, keeping a keyed digest of the copy's bytes so a later " +
		"identical copy (a durable or backfill twin) is dropped undecoded; in five interleaved " +
		"runs of each side that digest moved no figure of this row beyond the spread " +
		"(`BenchmarkDedupFinish`: it adds under a microsecond per copy on the busy machine). A raw " +
		"core subscriber only counts bytes. The fan-out no longer decodes a live channel's " +
		"message unless its bytes may hold @mentions (`delivery.mayMention`), but it was never " +
		"the large part: in a CPU profile of 1→10 at 128 B the fan-out was under 1 % of samples, " +
		"the subscribers' `endpoint.(*Endpoint).receive` " +
		"12 % (`CheckDelivery` 8 %), garbage collection 14 %, and nats.go's and the broker's " +
		"message paths most of the rest. The raw + encoding/json column is the fairer yardstick: a " +
		"hand-rolled receiver that decodes the same envelope with the standard library already " +
		"runs at a fraction of bare raw. A 0.9 ratio against a subscriber that does no work is out " +
		"of reach for an enveloped protocol whose every receiver must validate.",
	titleDM: "Per message cotal builds, validates and JSON-encodes the envelope and publishes it " +
		"with Nats-Msg-Id (one entry in the stream's duplicate window); the receiver decodes and " +
		"validates it, claims its id in the dedup window and acks. Raw publishes bare bytes and " +
		"acks. The owner's consumer is pulled 256 copies at a time into a queue whose one ticker " +
		"keeps every queued or handled copy in progress (`endpoint/pullqueue.go`); the copy no " +
		"longer arms a timer of its own, and an asynchronous send no longer starts a goroutine " +
		"to wait for its acknowledgement (nats.go's ack callback settles it). In a CPU profile of " +
		"row 12's DM (TCP, sync interval) the sender's `SendDMAsync` was about a fifth of the " +
		"client's samples, half of it nats.go's `PublishMsgAsync` (reply token, headers, the " +
		"pending-ack map), the receiver's queue and receive path about a tenth, garbage " +
		"collection and nats.go's read loop most of the rest.",
	titleAnycast: "As for DM: the envelope is encoded by the sender and decoded, validated and " +
		"deduplicated by the worker, and each copy is stored with a Nats-Msg-Id where raw's work " +
		"queue stores bare bytes. `svc_<role>` is shared by every holder of the role, so each " +
		"holder pulls only what its Handler handles in 50 ms at its recent pace and marks what " +
		"it holds in progress (docs/durable.md \"Pulling tasks\"). In process the pull size " +
		"is not what bounds the row: fixed pulls of 16, 64 or 256 (3 builds alternating, 5 " +
		"runs of 10 000 each) and the paced pulls (2 builds alternating, 2 × 3 runs) all " +
		"measured within its spread, 0.60–0.69 of raw + encoding/json.",
	titleDurable: "The backstop stores 11 messages for each message to 10 members (the CHAT " +
		"message and 10 DLV copies, each with a Nats-Msg-Id in a 2 h duplicate window) where raw " +
		"stores one message read by 10 consumers, and each copy is delivered and acked twice (the " +
		"fan-out reads the CHAT message once for every member, each member reads its DLV copy) " +
		"against raw's once. Every member also gets the live copy and deduplicates it. The " +
		"reference layout's pipeline, every copy through INBOX (`docs/durable.md`), stored 21 " +
		"(10 INBOX entries more) and delivered each copy three times; the " +
		"fan-out now hands a copy to DLV itself, checking the member's read ACL at that moment, " +
		"and keeps INBOX and the trusted reader for the copies it cannot decide yet (an absent " +
		"ACL record, a join still being written; `delivery/doc.go`). That halved the backstop's " +
		"own cost: `BenchmarkDurableFanout` (the fan-out to 10 members' DLV, nobody reading) used " +
		"13.1 s of process CPU for 15 000 messages before and 6.3 s after, and in this row's " +
		"profile the delivery loops fell from about 26 to 11 µs per copy. Six runs of rows 4 " +
		"and 9 before and five after, interleaved on the same busy machine (load 5–13 on two " +
		"cores), lowered the median process CPU per copy by about 40 % (128 B: 172 to 101 µs; " +
		"sync always: 437 to 269 µs) and raised the ratio (128 B: 0.05–0.16 before, 0.08–0.22 " +
		"after; sync always: 0.04–0.12 before, 0.12–0.18 after). What is left is mostly the " +
		"members' side: the broker delivering and taking acks for the DLV copies and the live " +
		"copies, and each Endpoint decoding and checking the live copy and deduplicating both " +
		"(as in row 2). A member's DLV copy of a message it surfaced live is byte for byte the " +
		"live copy, and it is no longer decoded: the Endpoint finds the surfaced copy by the id in " +
		"the DLV copy's Nats-Msg-Id, proves the match by a keyed digest of the payload and the " +
		"copy's path, and acks it as a duplicate (`endpoint.duplicateCopy`). In this row's " +
		"profile (`BenchmarkDurable`, both payloads) decoding and checking that copy " +
		"(`checkDurable`) was 2.9 % of process samples and the receive pipeline 9.4 %; after, the " +
		"undecoded check is 0.5 % and the pipeline 5.6 %. Eleven interleaved runs of each side on " +
		"the busy machine lowered the median process CPU per message from 104 to 95 µs at 128 B " +
		"and from 113 to 97 µs at 1 KiB (cotal/raw 6.56 to 5.51 and 5.23 to 4.81; paired, after " +
		"was lower in 8 of 11 runs at each size); copies/s moved within the spread (cotal/raw 0.185 " +
		"to 0.176 at 128 B, 0.186 to 0.209 at 1 KiB): the rate is the broker's. The backstop lag " +
		"is the backlog the publisher may build (500 messages ahead of the fan-out, 5 000 copies) " +
		"drained at the members' pace.",
	titleBackfill: "`Join` surfaces every history copy through the same receive pipeline: subject " +
		"parse, one-pass decode and validation, dedup claim, Handler, per copy. Raw's ordered " +
		"consumer does no per-message work; the raw + encoding/json column shows what decoding " +
		"alone costs a hand-rolled reader. The process CPU per message is the same on both " +
		"sides (12.0 against 11.1 µs at 128 B). The join surfaces each copy while its read goes " +
		"on, the read on a goroutine of its own into a queue without bound (endpoint/history.go), " +
		"so a Handler that itself joins a channel never holds the read up; until that change the " +
		"whole history was read before any of it was surfaced (81–88 ms of reading, then 16–30 ms " +
		"of surfacing, in one join of 10 000 copies), and five interleaved runs of each build " +
		"moved the median rate from 88 200 to 97 500 copies/s at 128 B and from 79 100 to 106 700 " +
		"at 1 KiB (cotal/raw + encoding/json 0.51 to 0.67 and 0.96 to 1.19). A join is now CPU-bound " +
		"on both cores: in its profile the receive pipeline is about a fifth of the samples, the " +
		"dedup window filling from empty (map and slice growth) 6 %, the broker's consumer, whose " +
		"filter is a wildcard over the senders, and nats.go's read loop most of the rest. The reads " +
		"cross the storage account's import into the agent's; pulls of 1 000 instead of 256 moved " +
		"the rate by about 5 %.",
	titlePresence: "Each endpoint process keeps one shared roster fed by one watch of the presence " +
		"bucket (SPEC §6), and heartbeats that change only ts are taken without decoding; the " +
		"suite measures the fleet sizes that fit on this machine.",
	titleMemory: "The heap is the live heap after forced collections (runtime/metrics " +
		"/gc/heap/live:bytes, the smallest of three readings), read once it has stopped changing, " +
		"before and after the n connections; the cotal mesh is closed before the raw side runs. " +
		"Both matter: the mesh's closed endpoints were freed during the raw side's readings, which " +
		"came out negative, and the on-create checks of the consumers the mints made go on for " +
		"seconds after the mints, holding up to 30 KiB per endpoint in a baseline read too early. " +
		"Of cotal's heap per idle endpoint (a heap profile of 100): 32 KiB are nats.go's " +
		"connection buffers, which each raw connection has too; 44 KiB are nats-server's " +
		"permission sublists for the credential's 41 subjects (SPEC Appendix B grants, per " +
		"identity: its inbox, DM and consumer API subjects); 10 KiB the stream infos nats.go keeps " +
		"with the presence and channel bucket handles; 7 KiB the credential (the JWT, kept for " +
		"reconnects, and its allow lists); 5 KiB nats.go's request mux; the bound consumers' " +
		"pulls, the service import's response entries and the roster rows most of the rest. None " +
		"has a cheap cut: the largest is the grants themselves.",
	titleSpace: "Every step of a cycle is CPU, not waiting, and the two cores overlap little of " +
		"it; the changes below cut a cycle's process CPU by about a sixth and its time by about a " +
		"fifth (234 runs of each build in turn on a loaded machine: median 91 → 73 ms, raw 5.6 ms " +
		"in both). Timed step by step (medians of 30 cycles, other " +
		"jobs on both cores): key store 3–4 ms (operator, system and two space accounts, four " +
		"pooled user keys; bbolt syncs only when it creates the file), broker 4 ms (1 of it the system connection that " +
		"enforces the per-identity connection cap), the provisioner's and delivery's connections " +
		"3.5–4 ms, eleven streams and buckets 4–6 ms, the delivery service 4–4.5 ms; each mint " +
		"2.5 ms (was 6.5–8), each endpoint connect 4 ms (JWT authentication, two bucket lookups " +
		"through the storage account, the presence write); close 5–6.5 ms (was 6.5–8). In a " +
		"profile the largest shares are ed25519 (key generation, signing each JWT and checking " +
		"each JWT's signature, in cotal and in nats-server: one generation or check costs " +
		"0.1–0.15 ms here), JSON (the JetStream API crossing the storage account's service import, " +
		"JWT claims) and garbage collection (12 %). Cut so far: a provisioned mint of a new identity " +
		"no longer runs a reconciliation pass (3 ms a mint); a new space's key pool is made with the " +
		"account, 4 keys instead of 16 at the first mint with an account re-sign; the mesh's own " +
		"credentials are signed while the broker starts; the connection cap no longer decodes each " +
		"connection's JWT, nor the consumer-create watch every API audit; endpoints and delivery " +
		"close at once. Keys are not cached across meshes in a process: a shared operator or account " +
		"key would make two meshes trust each other's credentials. What remains is the work raw " +
		"does not do (three accounts, JWT authentication of five connections, eleven streams " +
		"instead of one, the delivery service's consumers): the broker start and one " +
		"authenticated connection alone are past 3× raw.",
	titleCluster: "Both columns are cotal: the cluster over one node. Each DM is stored on the " +
		"DM stream's leader, replicated to the two other nodes and acknowledged to the sender " +
		"only once a majority holds it (RAFT), then delivered from the consumer's leader through " +
		"a route to the receiver's node; each ack crosses back and is replicated too. Three " +
		"in-process servers also share the two cores the single node has to itself.",
	titlePath: "The same work as rows 1–3, with the mesh in its own process: the client column " +
		"is the agents alone. Under sync always each stored message waits for its fsync, which " +
		"paces DM and anycast on both sides and hides part of cotal's extra client work; a live " +
		"multicast copy is delivered before it is stored, so there, and under sync interval, the " +
		"client's work shows: the envelope built, encoded and stored with " +
		"Nats-Msg-Id (the mesh process's CPU per message is higher for cotal too: the stream's " +
		"duplicate window, and the delivery service's reads of CHAT), decoded, checked and " +
		"deduplicated on receipt. A live multicast receiver of raw is a core subscription that " +
		"counts bytes; cotal's checks every copy as SPEC §5 requires. The client's extra CPU is " +
		"the sender's: in CPU profiles of the DM case under sync interval, one side at a time " +
		"(4 runs of 30 000 DMs), cotal's `SendDMAsync` took 0.77 s where raw + encoding/json's " +
		"publishing took 0.26 s (the envelope built, validated and encoded, a Nats-Msg-Id header, " +
		"a receipt per send and nats.go's acknowledgement timer for it), while cotal's whole " +
		"receive path took 0.41 s where the raw receiver's encoding/json decode alone took " +
		"0.58 s; multicast is alike (sender 0.56 s against 0.16 s, receiver 0.58 s against " +
		"0.54 s). Anycast adds its pulls: each of cotal's four holders pulls `svc_<role>` as " +
		"many tasks as its Handler handles in 50 ms at its recent pace, at most 256 (docs/" +
		"durable.md \"Pulling tasks\"), where raw's consumers pull 500. Against the fixed pulls " +
		"of 16 before (2 builds alternating, 2 × 3 runs of 10 000 under sync interval) the " +
		"rate rose from 18 242 and 18 390 to 25 807 and 22 367 msgs/s (cotal/raw 0.52 and 0.64 " +
		"to 0.71 and 0.77), the client's CPU per message fell from 24.5 and 23.7 to 18.7 and " +
		"20.2 µs and the mesh's from 67 and 69 to 49 and 59 µs; in process it moved within its " +
		"spread. In the sustained " +
		"DM case the receiver surfaces what is stored as it is stored, on both sides; what " +
		"differs is how fast the one sender stores while cotal's receiver, which costs more CPU " +
		"than a bare consumer, shares the two cores with it and the mesh.",
	titleSync: "The bounds of rows 2 and 4 hold on file storage. Under sync always every stored " +
		"message is fsynced, so the durable channel's 11 stored messages per message against " +
		"raw's one widen its gap; DM under sync always is paced by the fsync on both sides.",
}
