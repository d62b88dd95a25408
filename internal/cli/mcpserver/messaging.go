package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nkeys"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/termsafe"
	"github.com/cotal-go/cotal/wire"
)

type sendInput struct {
	Text     string   `json:"text" jsonschema:"the message to post"`
	Channel  string   `json:"channel,omitempty" jsonschema:"the channel to post on, e.g. general; default your first channel"`
	Mentions []string `json:"mentions,omitempty" jsonschema:"names of agents this message is for; they get it even when busy"`
}

type dmInput struct {
	To   string `json:"to" jsonschema:"the agent's name (the name it was minted with, which cotal_roster shows first) or its instance id"`
	Text string `json:"text" jsonschema:"the message"`
}

type anycastInput struct {
	Role string `json:"role" jsonschema:"the role that should do the task, e.g. reviewer"`
	Text string `json:"text" jsonschema:"the task"`
}

// sent says where a message was stored; storage is confirmed, delivery is not (SPEC §4).
type sent struct {
	ID     string `json:"id"`
	Kind   string `json:"kind"`
	To     string `json:"to"`
	Stream string `json:"stream"`
	Seq    uint64 `json:"seq"`
	Note   string `json:"note"`
}

const sentNote = "stored by the mesh; delivery is not confirmed"

func (s *Server) send(ctx context.Context, _ *mcp.CallToolRequest, in sendInput) (*mcp.CallToolResult, sent, error) {
	if strings.TrimSpace(in.Text) == "" {
		return nil, sent{}, fmt.Errorf("%w: text is empty; put the message in text", ErrInvalidArgument)
	}
	channel := in.Channel
	if channel == "" {
		if channel = s.defaultChannel(); channel == "" {
			return nil, sent{}, fmt.Errorf("%w: pass channel; you joined none (cotal_channels lists them, cotal_join joins one)", ErrNoChannel)
		}
	}
	if err := wire.ValidatePublishChannel(channel); err != nil {
		return nil, sent{}, fmt.Errorf("%w: %w; name one concrete channel such as general", ErrInvalidArgument, err)
	}
	if err := s.online("post on " + channel); err != nil {
		return nil, sent{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	r, err := s.e.Send(ctx, channel, []wire.Part{wire.TextPart(in.Text)}, endpoint.WithMentions(in.Mentions...))
	if errors.Is(err, endpoint.ErrPublishRefused) {
		return nil, sent{}, fmt.Errorf("the mesh refused the post: your credential may not post on %q; post on a channel it allows, "+
			"or ask whoever runs the mesh for a credential minted with --allow-publish %s", channel, channel)
	}
	if err != nil {
		return nil, sent{}, meshError("post on "+channel, err)
	}
	return nil, sent{ID: r.ID, Kind: string(endpoint.MetaChannel), To: wire.SanitizeChannel(channel), Stream: r.Stream,
		Seq: r.Seq, Note: sentNote}, nil
}

// defaultChannel is Options.DefaultChannel, else the first joined channel.
func (s *Server) defaultChannel() string {
	if s.opts.DefaultChannel != "" {
		return s.opts.DefaultChannel
	}
	if joined := s.e.Joined(); len(joined) > 0 {
		return joined[0]
	}
	return ""
}

func (s *Server) dm(ctx context.Context, _ *mcp.CallToolRequest, in dmInput) (*mcp.CallToolResult, sent, error) {
	if strings.TrimSpace(in.Text) == "" {
		return nil, sent{}, fmt.Errorf("%w: text is empty; put the message in text", ErrInvalidArgument)
	}
	to := strings.TrimPrefix(strings.TrimSpace(in.To), "@")
	if to == "" {
		return nil, sent{}, fmt.Errorf("%w: to is empty; name the agent (cotal_roster lists them) or give its id", ErrInvalidArgument)
	}
	if err := s.online("send the DM to " + to); err != nil {
		return nil, sent{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	id, err := s.resolve(ctx, to)
	if err != nil {
		return nil, sent{}, err
	}
	r, err := s.e.SendDM(ctx, id, []wire.Part{wire.TextPart(in.Text)})
	if errors.Is(err, endpoint.ErrPublishRefused) {
		return nil, sent{}, fmt.Errorf("the mesh refused the DM to %s: your credential may not send direct messages; "+
			"ask whoever runs the mesh for an agent credential", in.To)
	}
	if err != nil {
		return nil, sent{}, meshError("send the DM to "+in.To, err)
	}
	return nil, sent{ID: r.ID, Kind: string(endpoint.MetaDM), To: id, Stream: r.Stream, Seq: r.Seq, Note: sentNote}, nil
}

// resolve turns a DM target, without its '@', into an instance id: an id the roster knows or
// any instance id (SPEC §2), else the one agent minted with that name, online or not
// (endpoint.ResolveName): a name an agent merely calls itself never takes another's DMs.
func (s *Server) resolve(ctx context.Context, to string) (string, error) {
	if _, ok := s.e.Roster().Peer(to); ok || nkeys.IsValidPublicUserKey(to) {
		return to, nil
	}
	id, err := s.e.ResolveName(ctx, to)
	switch {
	case errors.Is(err, endpoint.ErrAmbiguousName):
		return "", fmt.Errorf("%w: %w; pass one of their ids as to", ErrAmbiguousName, err)
	case errors.Is(err, endpoint.ErrUnknownName):
		return "", fmt.Errorf("%w: no agent was minted with the name %q (a name in cotal_roster is the agent's own "+
			"choice, shown beside its minted name when they differ); pass an instance id", ErrUnknownName, to)
	case err != nil:
		return "", meshError("look up "+to, err)
	}
	return id, nil
}

// showSenders sets each message's From to how its sender should be shown
// (endpoint.SenderName): its minted name beside the one it claims when they differ.
func (s *Server) showSenders(ctx context.Context, msgs []InboxMessage) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	for i := range msgs {
		msgs[i].From = termsafe.String(s.e.SenderName(ctx, msgs[i].sender))
	}
}

func (s *Server) anycast(ctx context.Context, _ *mcp.CallToolRequest, in anycastInput) (*mcp.CallToolResult, sent, error) {
	if strings.TrimSpace(in.Text) == "" {
		return nil, sent{}, fmt.Errorf("%w: text is empty; put the task in text", ErrInvalidArgument)
	}
	if !wire.IsToken(in.Role) {
		return nil, sent{}, fmt.Errorf("%w: role %q must be letters, digits, '_' and '-' only, e.g. reviewer", ErrInvalidArgument, in.Role)
	}
	if err := s.online("send the task to role " + in.Role); err != nil {
		return nil, sent{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	r, err := s.e.SendAnycast(ctx, in.Role, []wire.Part{wire.TextPart(in.Text)})
	if errors.Is(err, endpoint.ErrPublishRefused) {
		return nil, sent{}, fmt.Errorf("the mesh refused the anycast to %q: your credential may not send tasks to roles; "+
			"ask whoever runs the mesh for an agent credential", in.Role)
	}
	if err != nil {
		return nil, sent{}, meshError("send the task to role "+in.Role, err)
	}
	return nil, sent{ID: r.ID, Kind: string(endpoint.MetaAnycast), To: in.Role, Stream: r.Stream, Seq: r.Seq,
		Note: sentNote + "; one holder of the role gets it, now or when one comes online"}, nil
}

type inboxInput struct {
	Peek        bool    `json:"peek,omitempty" jsonschema:"show the messages without clearing them"`
	WaitSeconds float64 `json:"wait_seconds,omitempty" jsonschema:"wait up to this many seconds for a message when there is none; default 0, return at once"`
}

// inboxView is cotal_inbox's result.
type inboxView struct {
	Messages []InboxMessage `json:"messages"`
	Dropped  int            `json:"dropped,omitempty"`
	Deferred int            `json:"deferred,omitempty"`
	// Note says what the drop counts mean, when there are any.
	Note string `json:"note,omitempty"`
}

func (s *Server) readInboxTool(ctx context.Context, _ *mcp.CallToolRequest, in inboxInput) (*mcp.CallToolResult, inboxView, error) {
	if in.WaitSeconds < 0 {
		return nil, inboxView{}, fmt.Errorf("%w: wait_seconds is %v; pass 0 to return at once or a positive number", ErrInvalidArgument, in.WaitSeconds)
	}
	if in.WaitSeconds > 0 {
		wait := min(time.Duration(in.WaitSeconds*float64(time.Second)), MaxWait)
		wctx, cancel := context.WithTimeout(ctx, wait)
		s.inbox.Wait(wctx)
		cancel()
	}
	b := s.inbox.Read(in.Peek)
	s.showSenders(ctx, b.Messages)
	v := inboxView{Messages: b.Messages, Dropped: b.Dropped, Deferred: b.Deferred}
	var notes []string
	if v.Dropped > 0 {
		notes = append(notes, fmt.Sprintf("%d channel messages were dropped because the inbox was full; cotal_history shows them, "+
			"and those that mention you or are on a durable channel come again", v.Dropped))
	}
	if v.Deferred > 0 {
		notes = append(notes, fmt.Sprintf("%d DMs or tasks were left with the mesh because the inbox was full; they come again", v.Deferred))
	}
	v.Note = strings.Join(notes, "; ")
	return nil, v, nil
}
