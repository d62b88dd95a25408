package bench

// notes say, per workload, what bounds a row that misses its target. BENCHMARKS.md prints
// the note of every workload with a missed row. They come from CPU profiles of these
// workloads (go test -bench -cpuprofile, pprof top) on this machine.
var notes = map[string]string{
	titleMulticast: "Per message cotal does about three times raw's broker work plus JSON on both ends. " +
		"The publisher builds, validates and encodes the envelope and stores it with Nats-Msg-Id " +
		"(a duplicate-window entry); the delivery service's fan-out consumer reads every CHAT " +
		"message, decodes it to check for mentions and durable members, and acks it; and every " +
		"subscriber runs SPEC §5's receive checks: `wire.CheckDelivery` parses the subject and " +
		"decodes and validates the envelope, then the id is claimed in the dedup window. A raw " +
		"core subscriber only counts bytes. Envelope decoding, once the largest single cost (14 µs " +
		"and 45 allocations at 128 B through encoding/json), is now a one-pass scanner in wire " +
		"(about 1.3 µs and 4 allocations at 128 B, BenchmarkDecodeMessage); what remains per " +
		"message is the fan-out reading every CHAT message on the same server, the receive " +
		"pipeline's dedup and accounting, and JetStream's own publish path. A 0.9 ratio against a subscriber that does no " +
		"work is out of reach for an enveloped protocol whose every receiver must validate.",
	titleDM: "Per message cotal builds, validates and JSON-encodes the envelope and publishes it " +
		"with Nats-Msg-Id (one entry in the stream's duplicate window); the receiver decodes and " +
		"validates it, claims its id in the dedup window, arms a keep-in-progress timer " +
		"(`endpoint.keepInProgress`, one `time.AfterFunc` per copy) and parses the ack metadata " +
		"twice (`redelivered` in `receive` and in `check`). Raw publishes bare bytes and acks. " +
		"The bind-only consumers are also pulled 16 at a time (`endpoint/consumers.go` " +
		"`consumeBatch`), where nats.go's Consume defaults to 500; the same raw consumer pulled " +
		"16 at a time lost 25–40 % in this harness. Fixes in reach: parse `msg.Metadata()` once " +
		"per copy in `Endpoint.receive` and pass it on; raise `consumeBatch` to what the 60 s ack " +
		"wait allows for a fast Handler (the comment's concern is a slow one).",
	titleAnycast: "As for DM: the envelope is encoded by the sender and decoded, validated and " +
		"deduplicated by the worker, each copy arms a keep-in-progress timer, and svc_<role> is " +
		"pulled 16 at a time per worker (`consumeBatch`) where raw's shared consumer uses " +
		"nats.go's default of 500.",
	titleDurable: "LAYOUT.md's backstop stores 21 messages for each message to 10 members (the CHAT " +
		"message, 10 INBOX entries, 10 DLV copies, each with a Nats-Msg-Id in a 2 h duplicate " +
		"window) where raw stores one message read by 10 consumers, and each copy is " +
		"JSON-decoded four times: by the fan-out, by the trusted reader (`decodeEntry`), and twice " +
		"by the member, because `endpoint.(*Endpoint).checkDurable` decodes with `DecodeMessage` " +
		"and then again through `CheckDelivery(origin, in.data)`. Every member also gets the live " +
		"copy and deduplicates it. The profile shows the process busy only about half of the " +
		"run: the pipeline is paced by its stages' round trips, with each member's dlv_<id> pulled " +
		"16 at a time. Fix in reach (endpoint/receive.go, `checkDurable`): replace " +
		"`CheckDelivery(origin, in.data)` by `ParseSubject(origin)`: the message is already decoded " +
		"and validated, and origin is built from its own from.id, so the second decode checks " +
		"nothing new. The write amplification is the design (the trusted reader re-authorizes " +
		"every copy per member, SPEC §9 item 5) and keeps the ratio far under 0.5.",
	titleBackfill: "`Join` surfaces every history copy through the same receive pipeline; nearly all " +
		"of the join's CPU is `wire.CheckDelivery`'s envelope decode, and half of that is " +
		"`Part.UnmarshalJSON` decoding the text again (the row 1 fix applies, and matters most " +
		"at 1 KiB). Raw's ordered consumer does no per-message work. Reading the history into " +
		"memory before surfacing it (endpoint/history.go) costs little in comparison.",
	titlePresence: "Each endpoint keeps its roster by watching the whole presence bucket (SPEC §6), " +
		"so N endpoints in one process receive and decode N × N / 2 s presence rows per second: " +
		"the work grows with the square of the fleet, and in a profile at 300 endpoints " +
		"(45 000 rows/s) " +
		"`endpoint.(*Roster).apply` with `DecodePresence` was about a third of process CPU. A " +
		"fleet of 1 000 (500 000 rows/s) does not fit on two cores: in a trial its connects " +
		"timed out (\"announce presence: context deadline exceeded\") before the fleet was up, " +
		"so the suite measures the sizes that fit; 1 000 under 10 % of a core is out of reach " +
		"by construction. Fixes are architectural: endpoints sharing a process could share one " +
		"presence watch and roster, and the roster could skip decoding a row whose value " +
		"differs from the last one only in ts. The heap per endpoint grows with N for the same " +
		"reason: every roster holds every peer.",
	titleSpace: "Most of cotal's time is fixed sleeps, not work. nats-server's `Shutdown` sleeps " +
		"50 ms whenever any R1 pull request is pending (`signalPullConsumers`, " +
		"server/jetstream.go:1044), and every mesh has some (the delivery loops, each endpoint's " +
		"bindings); and nats.go's `Conn.Drain` polls for its subscriptions every 10 ms " +
		"(nats.go:6448), which every endpoint's Close and the mesh's provisioner and delivery " +
		"connections pay once each: 40 ms for two endpoints. Fixes: broker/broker.go `stop`: " +
		"call `b.srv.ShutdownJetStream()` before `b.srv.Shutdown()` (on a bare server with a " +
		"pending pull that took shutdown from 50 ms to 0.5 ms here); space/runtime.go `drain`: " +
		"`Flush` then `Close` the mesh's own connections, whose loops have already stopped and " +
		"acked what they finished, instead of `Drain`. What remains is work the raw side does " +
		"not do: the bbolt key store (operator, account and credential records, fsynced), ten " +
		"streams and buckets instead of one, the delivery service's consumers and watches, two " +
		"mints (JWT, ACL record, bind-only consumers) and two connects (JWT auth, presence " +
		"write, roster watch, bindings); start alone is about 30 ms, past 3× raw already.",
	titleSync: "The bounds of rows 2 and 4 hold on file storage. Under sync always every stored " +
		"message is fsynced, so the durable channel's 21 stored messages per message against " +
		"raw's one widen its gap; DM under sync always is paced by the fsync on both sides.",
}
