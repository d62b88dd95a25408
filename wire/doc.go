// Package wire is the Cotal wire contract (SPEC v0.3, with the layout choices of
// docs/storage.md) as data and pure functions. It connects to nothing: the server-side packages
// (provisioner, delivery, space) and the client (endpoint) all import it, so every path reads
// the wire the same way and no server-side code links the client.
//
// What it holds:
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
//   - Registry records (docs/storage.md "ACL records", "Membership records"): ACLRecord and
//     Membership, decoded strictly.
//   - Join links (SPEC §10): ParseLink and Link.
//   - The delivery control ops (docs/storage.md "Control service"): OpDurableJoin,
//     OpDurableLeave and OpListMemberships with their args and replies, which the delivery
//     service serves and endpoint sends.
//   - The layout (docs/storage.md "Streams", "KV buckets", "Consumers"): Names.Streams and the
//     consumer specs (Names.InstanceConsumerSpecs, HistoryConsumerSpec, FanoutConsumerSpec,
//     ReaderConsumerSpec) as plain data; internal/jsconfig turns them into JetStream configs.
//   - Profile grants (SPEC §9, Appendix B, docs/accounts.md "Profiles and grants"):
//     AgentPermissions, ObserverPermissions, AdminPermissions, ProvisionerPermissions and
//     DeliveryPermissions, which provisioner signs into credentials.
//
// What it does not guarantee: authenticity beyond a single trusted broker (SPEC §9), nor any
// meaning of the payload beyond its shape. Decoders of values an agent can influence refuse
// anything but a valid record, including the JetStream acknowledgements a forged reply subject
// makes the server write (docs/hostile-agents.md "Reply subjects are the requester's"); callers
// drop and count what they refuse.
package wire
