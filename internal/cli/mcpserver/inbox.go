package mcpserver

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/termsafe"
	"github.com/cotal-go/cotal/wire"
)

// DefaultInboxSize is how many messages an Inbox holds when Options.InboxSize is zero.
const DefaultInboxSize = 1000

// ErrInboxFull: a copy arrived while the inbox was full. It is returned to the Endpoint, for
// which the copy was not handled: a JetStream copy (DM, anycast or durable) is nak'd so that
// the mesh redelivers it later, never acknowledged before it is in the buffer; a live or
// history copy is dropped, and its id is not recorded as handled, so its durable or @mention
// twin is still taken in when it arrives (SPEC §4).
var ErrInboxFull = errors.New("inbox is full")

// InboxMessage is one message as cotal_inbox, cotal_history and the inbox resource show it.
// Every string the sender chose (its name and id, the channel, the text, the mentions, the ids
// it quotes) is escaped by termsafe, so a model reads no control, bidi or invisible character
// of the sender's; the text keeps its newlines and tabs.
type InboxMessage struct {
	// Kind is how the message reached this agent: channel, dm or anycast (SPEC §4).
	Kind string `json:"kind"`
	// Channel is the channel of a channel message, in its wire form.
	Channel string `json:"channel,omitempty"`
	// From and FromID are the sender's display name and instance id (SPEC §2).
	From   string `json:"from"`
	FromID string `json:"from_id"`
	// ID is the message id; Time its send time in RFC 3339.
	ID   string `json:"id"`
	Time string `json:"time"`
	// Text is the message's text parts joined by newlines.
	Text string `json:"text"`
	// Mentions are the names the sender mentioned, ReplyTo the message it answers.
	Mentions []string `json:"mentions,omitempty"`
	ReplyTo  string   `json:"reply_to,omitempty"`
	// History marks a copy read from the channel's history on join (SPEC §7), not a new one.
	History bool `json:"history"`
	// sender is from as the message carries it, for showSenders.
	sender wire.EndpointRef
}

// Inbox is the bounded buffer between the Endpoint's receive pipeline and cotal_inbox. A
// JetStream copy is acknowledged only once it is in the buffer; when the buffer is full a
// JetStream copy is refused (and redelivered later by the mesh) and a live channel copy, which
// nothing redelivers, is dropped and counted. Both are refused with ErrInboxFull, so the
// Endpoint does not count a dropped live copy as handled and its durable or @mention twin can
// still come in. Each message appears once: the Endpoint deduplicates a live copy and its
// durable or @mention twin by id (SPEC §4). Safe for concurrent use.
type Inbox struct {
	size int

	mu       sync.Mutex
	msgs     []InboxMessage
	dropped  int           // live copies lost to a full buffer since the last drain
	deferred int           // JetStream copies refused for redelivery since the last drain
	arrived  chan struct{} // closed and replaced when a message arrives
	notify   func()        // told of every arrival; must not block
}

// NewInbox returns an empty inbox holding at most size messages (DefaultInboxSize if size < 1).
func NewInbox(size int) *Inbox {
	if size < 1 {
		size = DefaultInboxSize
	}
	return &Inbox{size: size, arrived: make(chan struct{})}
}

// Handle is the endpoint.Handler that fills the inbox; pass it as Options.Handler so that
// nothing delivered before the server starts is lost.
func (in *Inbox) Handle(_ context.Context, d endpoint.Delivery) error {
	in.mu.Lock()
	if len(in.msgs) >= in.size {
		defer in.mu.Unlock()
		if redeliverable(d.Meta) {
			in.deferred++
			return ErrInboxFull
		}
		in.dropped++
		return ErrInboxFull
	}
	in.msgs = append(in.msgs, inboxMessage(d))
	close(in.arrived)
	in.arrived = make(chan struct{})
	notify := in.notify
	in.mu.Unlock()
	if notify != nil {
		notify()
	}
	return nil
}

// redeliverable reports whether the mesh redelivers a copy the Handler refuses: DMs, anycasts
// and durable copies come from JetStream consumers; live and history copies do not (SPEC §8).
func redeliverable(m endpoint.Meta) bool {
	return m.Durable || m.Kind == endpoint.MetaDM || m.Kind == endpoint.MetaAnycast
}

// InboxBatch is what one read of the inbox returns.
type InboxBatch struct {
	// Messages are oldest first.
	Messages []InboxMessage `json:"messages"`
	// Dropped counts live channel copies the full inbox dropped; they can still be read with
	// cotal_history, and one that mentioned this agent or came on a durable channel is taken
	// in again when its durable copy arrives.
	Dropped int `json:"dropped,omitempty"`
	// Deferred counts DMs, anycasts and durable copies the full inbox refused; the mesh
	// delivers them again later.
	Deferred int `json:"deferred,omitempty"`
}

// Read returns the buffered messages, oldest first, with the drop counts. Unless peek, the
// messages and counts are cleared.
func (in *Inbox) Read(peek bool) InboxBatch {
	in.mu.Lock()
	defer in.mu.Unlock()
	b := InboxBatch{Messages: append([]InboxMessage{}, in.msgs...), Dropped: in.dropped, Deferred: in.deferred}
	if !peek {
		in.msgs, in.dropped, in.deferred = nil, 0, 0
	}
	return b
}

// Wait returns once the inbox holds a message, or when ctx ends.
func (in *Inbox) Wait(ctx context.Context) {
	in.mu.Lock()
	if len(in.msgs) > 0 {
		in.mu.Unlock()
		return
	}
	arrived := in.arrived
	in.mu.Unlock()
	select {
	case <-arrived:
	case <-ctx.Done():
	}
}

// onArrival sets the function told of every arrival.
func (in *Inbox) onArrival(f func()) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.notify = f
}

func inboxMessage(d endpoint.Delivery) InboxMessage {
	m := d.Message
	var text []string
	for _, p := range m.Parts {
		if p.Kind == wire.PartText {
			text = append(text, p.Text)
		}
	}
	var mentions []string
	for _, name := range m.Mentions {
		mentions = append(mentions, termsafe.String(name))
	}
	return InboxMessage{Kind: string(d.Meta.Kind), Channel: termsafe.String(d.Meta.Channel), From: termsafe.String(m.From.Name),
		FromID: termsafe.String(m.From.ID), ID: termsafe.String(m.ID), Time: time.UnixMilli(m.TS).UTC().Format(time.RFC3339Nano),
		Text: termsafe.Text(strings.Join(text, "\n")), Mentions: mentions, ReplyTo: termsafe.String(m.ReplyTo),
		History: d.Meta.Historical, sender: m.From}
}
