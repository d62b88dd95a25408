// Package endpoint is the Cotal wire contract (SPEC v0.3) and the Go client that speaks it.
//
// # Protocol half
//
// The protocol half has no network code; the broker-side packages (provisioner, delivery) and
// any client share it, so every path reads the wire the same way:
//
//   - Subjects (SPEC §3): Names builds every subject, stream, bucket and consumer name;
//     ParseSubject is the one parser, locating the sender by kind (token 3 for chat, token 4
//     for inst, svc and ctl) and refusing every other shape. ValidateChannel,
//     ValidatePublishChannel, ValidatePolicyChannel and MatchChannel are the channel rules,
//     with NATS wildcard semantics (team.> covers team.a, not team).
//   - Envelopes (SPEC §5): CotalMessage, Part, EndpointRef, ControlRequest and ControlReply.
//     A message that passes Validate encodes to JSON valid against cotal.schema.json.
//   - The receive check (SPEC §4, §5): CheckDelivery parses the subject, decodes the payload
//     and checks from.id against the subject sender. Its errors are *Anomaly values carrying
//     the reason tokens malformed-subject, sender-mismatch and malformed-json (ReasonOf): the
//     message is terminated, never redelivered. CheckControlRequest does the same for ctl.
//   - Presence (SPEC §6): AgentCard, Presence, DecodePresence and staleness.
//   - Channel config (SPEC §7): ChannelConfig, ChannelDefaults and the only resolution of the
//     effective replay, replay window and delivery class (EffectiveReplay,
//     EffectiveReplayWindow, EffectiveClass), used by live join, fan-out, history and
//     membership alike.
//   - Registry records (LAYOUT.md): ACLRecord and Membership, decoded strictly.
//   - Join links (SPEC §10): ParseLink and Link.
//
// What it does not guarantee: authenticity beyond a single trusted broker (SPEC §9), nor any
// meaning of the payload beyond its shape. Decoders of values an agent can influence refuse
// anything but a valid record, including the JetStream acknowledgements a forged reply subject
// makes the server write (LAYOUT.md "Reply-subject injection"); callers drop and count what
// they refuse.
//
// # Client half
//
// Endpoint is a conformant authenticated client (the SPEC §12 checklist). It imports nats.go,
// never nats-server, so a remote agent links no broker. Connect takes a join link and a
// .creds file (remote), or an in-process provider handed out by package space (no TCP):
//
//   - Identity (SPEC §2, §10): the id is the credential's nkey; an explicit ID that differs
//     fails before anything is published. The inbox prefix _INBOX_<id> is set before any
//     request, pull or watch. Reconnects are bounded; a CONNECT line over the broker's
//     max_control_line is reported as ErrControlLine instead of retried forever.
//   - Presence (SPEC §6): a heartbeat on its own timer, never behind a busy Handler, writes
//     only the own key; Close writes one final offline. The Roster watches the bucket, drops
//     rows that are not their key's presence, marks stale and deleted peers offline, and
//     rebuilds its watch when it dies or stalls.
//   - Send (SPEC §4, §8): through JetStream with Nats-Msg-Id = id; a Receipt says where the
//     message was stored, never that it was delivered. A publish lost in a broker restart is
//     retried with the same id, which JetStream deduplicates.
//   - Receive: one pipeline for live channel copies, dm_<id>, svc_<role>, dlv_<id> and
//     backfill: kind from the subject, sender checked, deduplicated by id across every path,
//     acked only after the Handler returned nil, nak'd on a Handler error, terminated on the
//     three permanent anomalies (counted in Stats, never surfaced).
//   - Channels (SPEC §7): Join takes the CHAT frontier as watermark, subscribes, confirms the
//     broker accepted the subscription, backfills history up to the watermark, and on a
//     durable channel asks the delivery service for membership; JoinResult says honestly
//     whether the join is durable or live with the backstop unavailable.
//   - Control (SPEC §5): Request and Serve on ctl.<service>, with the sender check and the
//     reply-subject guard of LAYOUT.md.
//   - Observers and admins (SPEC Appendix B): with such a credential the Endpoint is passive:
//     it reads the roster, history and live chat, writes no presence (SetStatus returns
//     ErrPassive), binds no consumer and requests no durable membership.
package endpoint
