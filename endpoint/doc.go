// Package endpoint is the Go client of a Cotal mesh (SPEC v0.3): the only code in this module
// that connects to a mesh as an agent, observer or admin. The contract it speaks (subjects,
// envelopes, presence, channel config, registry records, links) lives in package wire.
//
// Endpoint is a conformant authenticated client (the SPEC §12 checklist). It imports nats.go,
// never nats-server, so a remote agent links no broker. Connect takes a join link and a
// .creds file (remote), or an in-process provider handed out by package space (no TCP):
//
//   - Identity (SPEC §2, §10): the id is the credential's nkey; an explicit ID that differs
//     fails before anything is published. The inbox prefix _INBOX_<id> is set before any
//     request, pull or watch. Reconnects are bounded unless Options.ReconnectForever; a CONNECT
//     line over the broker's max_control_line is reported as ErrControlLine instead of retried
//     forever.
//   - Presence (SPEC §6): a heartbeat on its own timer, never behind a busy Handler, writes
//     only the own key; Close writes one final offline. The Roster watches the bucket, drops
//     rows that are not their key's presence, marks stale and deleted peers offline, and
//     rebuilds its watch when it dies or stalls.
//   - Send (SPEC §4, §8): through JetStream with Nats-Msg-Id = id; a Receipt says where the
//     message was stored, never that it was delivered. A publish lost in a broker restart is
//     retried with the same id, which JetStream deduplicates. A DM or task that its space's
//     full store refuses fails with ErrStoreFull, naming the store; it is not retried.
//     SendAsync, SendDMAsync and SendAnycastAsync return before the acknowledgement with a
//     PendingReceipt to select on (Done) or wait for, at most Options.MaxPendingAsync at once.
//   - Receive: one pipeline for live channel copies, dm_<id>, svc_<role>, dlv_<id> and
//     backfill: kind from the subject, sender checked, deduplicated by id across every path
//     (a copy byte for byte one already surfaced is dropped before it is decoded),
//     acked only after the Handler returned nil, nak'd on a Handler error, terminated on the
//     three permanent anomalies (counted in Stats, never surfaced). Once Close has begun
//     nothing more is surfaced: the bound consumers are drained and each copy they had pulled
//     but not surfaced is nak'd, so it is redelivered at once, not after its ack wait.
//   - Readiness: Connect returns with dm_<id>, dlv_<id> and svc_<role> consuming, or
//     reported missing, and the credential's --subscribe channels joined; Backlog reads what
//     each bound consumer still owes the instance.
//   - Channels (SPEC §7): Join takes the CHAT frontier as watermark, subscribes, confirms the
//     broker accepted the subscription, backfills history up to the watermark, and on a
//     durable channel asks the delivery service for membership; JoinResult says honestly
//     whether the join is durable or live with the backstop unavailable.
//   - Control (SPEC §5): Request and Serve on ctl.<service>, with the sender check and the
//     reply-subject guard of docs/storage.md "Control service".
//   - Observers and admins (SPEC Appendix B): with such a credential the Endpoint is passive:
//     it reads the roster, history and live chat, writes no presence (SetStatus returns
//     ErrPassive), binds no consumer and requests no durable membership. Options.Passive makes
//     an agent credential's Endpoint passive too, to read without taking the agent's copies.
//   - Reading (SPEC §6–§9): History (the last N retained messages of a channel, through the
//     pinned chathist_<id> consumer), Channels (counts and effective config), Follow (the live
//     traffic within the grants, DMs and anycasts too for an admin) and Roster. They
//     return plain values, take a context and print nothing, for the command line and any
//     other front end; a read outside the grants fails with ErrReadRefused when the broker
//     refuses it, not at a timeout. ParseCredential reads a .creds file without the network
//     (its id, profile, role, space and read and publish ACLs), and is cotal's only .creds
//     parser: CredentialSeed, for minting the same identity again, is built on it.
package endpoint
