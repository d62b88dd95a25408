// Package delivery is the durable backstop of a space (SPEC §4, §7, §8, §9 item 5;
// docs/durable.md, docs/storage.md "Control service"). It runs inside the mesh on its own scoped
// connection (wire.DeliveryPermissions) and consists of supervised loops:
//
//   - the membership registry (SPEC §7): records in cotal_members_<s>, written only here, with
//     KV compare-and-set and a higher generation on every join, and kept in memory: loaded once
//     by a long-lived watch that afterwards restores any record someone else overwrote;
//   - the delivery control service on cotal.<s>.ctl.delivery.<sender>: durableJoin,
//     durableLeave, listMemberships;
//   - the fan-out (consumer fanout on CHAT_<s>), which is also the trusted reader of SPEC §9
//     item 5 for every member whose read ACL it knows: a durable channel's message is handed
//     to the DLV subject cotal.<s>.dlv.<member> of every eligible member but the sender, and a
//     live channel's @mention to the instance that name resolves to (the unique live holder,
//     or with none live the unique last-seen holder, so an offline target still gets it,
//     SPEC §4), each after checking the member's current read ACL (Config.ACL, SPEC §9 item
//     6) at that moment; the member's bind-only dlv_<id> consumer reads it with ack
//     semantics. A live channel's message whose bytes cannot hold @mentions (no "mentions"
//     key and no escape) is acked without being decoded;
//   - the deferred hand-over (consumer reader on INBOX_<s>): a member the ACL source does not
//     know yet when the fan-out routes its copy (absent from the ACL registry), or whose join
//     record is still being written and may be rolled back, gets an INBOX entry instead. The
//     reader re-authorizes it later against the member's read ACL and, for a durable channel,
//     its membership interval, retrying an unknown member a bounded number of times, before
//     it hands the copy over the same way;
//   - a watch of the channel registry and a follow of the presence directory, which the fan-out
//     reads from memory (docs/durable.md "Views kept in memory"); a presence heartbeat that
//     changes only ts is taken without decoding the row again. Presence is followed without a
//     consumer (follow.go), since agents can hold the bucket's consumer cap, and the fan-out
//     does not wait for it once loaded: it feeds @mentions only, which resolve on the last
//     known rows while the follow restarts (Stats.MentionsStalePresence).
//
// # Guarantees
//
// A member of a durable channel receives, at least once, every message of that channel whose
// CHAT sequence is greater than its join cursor and, once it has left, not greater than its
// leave cursor (SPEC §4, §7), within retention (below). Messages outside the interval are
// never copied; leave is a hard read boundary. A CHAT message is acknowledged only after every
// DLV copy and INBOX entry written for it is stored, and an INBOX entry only after its DLV copy
// is stored, so a crash anywhere redelivers and loses nothing stored; a hand-over redone
// carries the same Nats-Msg-Id and is deduplicated. A copy whose channel the member's read ACL
// does not cover when it is handed over is dropped, never delivered. The class of a channel is
// resolved fresh for every message through wire.EffectiveClass, the one resolution every path
// uses. Nothing is dropped silently: every drop has a Stats counter and a log line.
//
// # The join fence
//
// A join reads the join cursor (the CHAT last sequence) and inserts the record while holding
// the lock the fan-out holds while it decides a message's recipients. A message the fan-out
// decided before the join was stored before the cursor was read, so its sequence is at most the
// cursor and it is not eligible; every message decided after the join sees the record. So
// nothing after the cursor is missed and nothing at or before it is copied, and the activation
// catch-up window (joinCursor, fence] a join would otherwise need is always empty: records are
// written with activated true and no catch-up copy is needed. A leave reads its cursor under
// the same lock, so a message after the leave cursor is never decided against the open record.
//
// The control service serves requests concurrently (Config.ControlWorkers, from a bounded
// queue with a per-sender bound). Joins and leaves of different members then run side by
// side; each still reads its cursor and updates the view in one hold of the fence, so the
// argument above holds for each on its own, and the writes of one member key are serialized
// by that key's lock, so its compare-and-set revision is never raced.
//
// # Rejoin
//
// A rejoin takes a new cursor and generation (SPEC §7). The interval it replaces, closed at its
// leave cursor or, if it was still open, at the new join cursor, is kept in the record
// ("previous", a cotal addition readers ignore) until the fan-out's ack floor passes it, because
// the fan-out may not yet have routed every message inside it. Entries are tagged with the
// generation whose interval admitted them; the reader checks an entry of the current generation
// against the current interval and delivers one of an earlier generation, which the fan-out
// wrote only inside that generation's interval. A rolled-back join's generation is never
// authorized.
//
// # What it does not guarantee
//
//   - Retention bounds at-least-once (SPEC §4). CHAT keeps 1000 messages per sender+channel
//     subject; a burst that outruns the fan-out is evicted before it is read. The fan-out
//     detects the jump in the stream sequence, counts it (Stats.GapsDetected), logs its range
//     and records it in every membership it overlaps, which listMemberships lists; the
//     evicted subjects are gone, so a gap cannot be pinned to one channel.
//   - INBOX keeps 1000 entries per member. The fan-out waits while a member has close to that
//     many entries the reader has not taken (backpressure), moving the pressure to CHAT; an
//     INBOX jump is still counted (Stats.ReaderGaps) and logged.
//   - DLV keeps 1000 copies per member and drops the oldest. No hand-over lets that drop one
//     the member has not acknowledged: once a member has 1000 unacknowledged copies (its
//     dlv_<id> consumer's pending plus ack-pending, plus the copies in flight), the new copy is
//     refused instead, so the member keeps the oldest copies it was owed (SPEC §4's "within
//     retention"). Each refused copy is counted (Stats.ReaderDroppedFull), logged at most once
//     a minute per member and, for a durable channel, listed as a one-sequence gap of the
//     membership in listMemberships (docs/durable.md "Gaps and losses"). The hand-over does not
//     wait for a member, so one that reads slower than its channels are written for 1000 copies
//     sees gaps, as an offline one does; it never slows the others.
//   - Losses are kept in the membership record, under "lost" (lost.go): the count of refused
//     copies and the latest 256 gap ranges, written by compare-and-set as soon as they are
//     counted and again at Close, so a restart lists them again. A crash (kill -9) between a
//     count and its write, a KV round trip, forgets that loss; refused @mention copies of a
//     channel the member holds no record of are counted in memory only.
//   - Mention routing uses the latest presence row of each instance, judged at the message's
//     CHAT store time: an instance that came online after the publish can count as present.
//     Offline holders of a name are remembered since the mesh started; after a restart, one
//     whose presence row expired (6 s TTL) is unknown until it heartbeats again.
//   - No ordering across channels, between redelivered and new copies, or between a copy
//     that waited in INBOX for its member's ACL and later ones (SPEC §4).
//   - Duplicates: at-least-once means a member may see a copy twice; receivers deduplicate by
//     id (SPEC §4, §8). DLV copies carry Nats-Msg-Id <id>:<member>, deduplicated for 2 h.
//   - One Service per space. Its in-memory view is authoritative; a second Service on the same
//     space would overwrite the first one's records.
//
// # Lock order
//
// A member key's lock (registry.keyLock) before memberView.mu; at most one key's lock is held
// at a time. memberView.mu also guards the losses of every membership (lost.go). Every other
// lock (registry.revMu, controlPool.mu, kvCache.mu, backlog.mu, handoffQuota.mu, gapLog.mu,
// loop.mu, gate.mu) is a leaf: no other lock is taken while it is held.
package delivery
