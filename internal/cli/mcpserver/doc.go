// Package mcpserver serves a Cotal agent to a Model Context Protocol client: an agent runtime
// (Claude Code, Cursor, OpenCode, ...) calls the cotal_* tools and is one peer of the mesh,
// through one endpoint.Endpoint connected with the agent's credential (SPEC §2). It uses the
// Endpoint's public API only and speaks MCP through the official Go SDK.
//
// Guarantees:
//   - The tool names and parameters match the public TypeScript reference's cotal_* surface,
//     so prompts written for it work; optional parameters are optional in the input schemas.
//   - Every failure (a channel outside the ACL, an unknown or ambiguous name, an unreachable
//     mesh) is a tool result with isError and a sentence that says what to do; no tool error
//     ends the server.
//   - Deliveries collect in a bounded Inbox (SPEC §4): each message once, since the Endpoint
//     deduplicates a live copy and its durable or @mention twin by id; a JetStream copy is
//     acknowledged only once it is in the buffer, and a full buffer refuses it for redelivery;
//     a live copy that does not fit is dropped and counted, and cotal_inbox says so; it is not
//     reported as handled, so its durable or @mention twin still comes in.
//   - Every string a peer or the registry chose reaches the model escaped by package termsafe,
//     in every tool result, tool error and the inbox resource: no control, bidi or invisible
//     character of theirs is read raw. Message text keeps its newlines and tabs.
//   - Channel registry text (a description, instructions) reaches the model only fenced by one
//     function as the channel operator's attributed, advisory note, escaped so that it cannot
//     close the fence or open another (advisory.go).
//   - cotal_orientation is a read-only card of the agent's identity, its credential's read and
//     post grants, its tools as a client lists them, who is present and what waits unread;
//     the server's instructions tell the model to call it first.
//   - The inbox is also the resource InboxURI; subscribed clients are notified when messages
//     arrive, so a runtime that supports it need not poll.
//
// It does not mint credentials, start a mesh or write to stdout: the command that embeds it
// chooses the transport and where logs go.
package mcpserver
