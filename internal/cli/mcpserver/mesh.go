package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/termsafe"
	"github.com/cotal-go/cotal/wire"
)

type empty struct{}

// peerView is one roster row; its strings are the peer's own choice, escaped by termsafe.
type peerView struct {
	Name     string `json:"name"`
	ID       string `json:"id"`
	Role     string `json:"role,omitempty"`
	Status   string `json:"status"`
	Activity string `json:"activity,omitempty"`
	LastSeen string `json:"last_seen"`
	You      bool   `json:"you,omitempty"`
}

type rosterView struct {
	Peers []peerView `json:"peers"`
}

func (s *Server) roster(ctx context.Context, _ *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, rosterView, error) {
	if err := s.online("read the roster"); err != nil {
		return nil, rosterView{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	select {
	case <-s.e.Roster().Loaded():
	case <-ctx.Done():
		return nil, rosterView{}, meshError("read the roster", ctx.Err())
	}
	v := rosterView{Peers: []peerView{}}
	for _, p := range s.e.Roster().Snapshot() {
		if p.Removed {
			continue
		}
		status := string(p.Presence.Status)
		if !p.Online {
			status = string(wire.StatusOffline)
		}
		c := p.Presence.Card
		name := s.e.SenderName(ctx, wire.EndpointRef{ID: c.ID, Name: c.Name})
		v.Peers = append(v.Peers, peerView{Name: termsafe.String(name), ID: termsafe.String(c.ID),
			Role: termsafe.String(c.Role), Status: termsafe.String(status), Activity: termsafe.String(p.Presence.Activity),
			LastSeen: p.LastSeen.UTC().Format(time.RFC3339), You: c.ID == s.e.ID()})
	}
	return nil, v, nil
}

type statusInput struct {
	Status   string  `json:"status,omitempty" jsonschema:"idle, waiting or working; default unchanged"`
	Activity *string `json:"activity,omitempty" jsonschema:"what you are doing, in a few words; default unchanged, empty clears it"`
}

type statusView struct {
	Status   string `json:"status"`
	Activity string `json:"activity,omitempty"`
}

func (s *Server) status(ctx context.Context, _ *mcp.CallToolRequest, in statusInput) (*mcp.CallToolResult, statusView, error) {
	s.statusMu.Lock()
	defer s.statusMu.Unlock()
	status, activity := s.state.Status, s.state.Activity
	if in.Status == "" && in.Activity == nil {
		return nil, s.state.shown(), nil
	}
	if in.Status != "" {
		status = in.Status
	}
	if in.Activity != nil {
		activity = *in.Activity
	}
	switch wire.PresenceStatus(status) {
	case wire.StatusIdle, wire.StatusWaiting, wire.StatusWorking:
	default:
		return nil, statusView{}, fmt.Errorf("%w: status %q; use idle, waiting or working", ErrInvalidArgument, status)
	}
	if err := s.online("announce the status"); err != nil {
		return nil, statusView{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	if err := s.e.SetStatus(ctx, wire.PresenceStatus(status), activity); err != nil {
		return nil, statusView{}, meshError("announce the status", err)
	}
	s.state = statusView{Status: status, Activity: activity}
	return nil, s.state.shown(), nil
}

// shown is v as the tool answers it, escaped by termsafe like every result.
func (v statusView) shown() statusView {
	return statusView{Status: termsafe.String(v.Status), Activity: termsafe.String(v.Activity)}
}

// channelView is one channel with its effective config (SPEC §7) and this agent's join state.
// The name comes from the mesh's streams, escaped by termsafe; the description and
// instructions from the registry, fenced by operatorNote as the operator's advisory note.
type channelView struct {
	Name         string `json:"name"`
	Messages     uint64 `json:"messages"`
	Class        string `json:"class"`
	Replay       bool   `json:"replay"`
	ReplayWindow string `json:"replay_window,omitempty"`
	Description  string `json:"description,omitempty"`
	Instructions string `json:"instructions,omitempty"`
	Joined       bool   `json:"joined"`
	JoinState    string `json:"join_state,omitempty"`
}

type channelsView struct {
	Channels []channelView `json:"channels"`
	Joined   []string      `json:"joined"`
}

func (s *Server) channelView(c endpoint.ChannelInfo) channelView {
	v := channelView{Name: termsafe.String(c.Name), Messages: c.Messages, Class: termsafe.String(string(c.Class)), Replay: c.Replay}
	if c.ReplayWindow > 0 {
		v.ReplayWindow = c.ReplayWindow.String()
	}
	if c.Config != nil {
		v.Description = operatorNote(c.Name, "description", c.Config.Description)
		v.Instructions = operatorNote(c.Name, "instructions", c.Config.Instructions)
	}
	if j, ok := s.e.JoinStatus(c.Name); ok {
		v.Joined, v.JoinState = true, termsafe.String(string(j.State))
	}
	return v
}

func (s *Server) channels(ctx context.Context, _ *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, channelsView, error) {
	if err := s.online("list the channels"); err != nil {
		return nil, channelsView{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	list, err := s.e.Channels(ctx)
	if err != nil {
		return nil, channelsView{}, meshError("list the channels", err)
	}
	v := channelsView{Channels: []channelView{}, Joined: joined(s.e)}
	for _, c := range list.Channels {
		v.Channels = append(v.Channels, s.channelView(c))
	}
	return nil, v, nil
}

type channelInput struct {
	Channel string `json:"channel" jsonschema:"the channel, e.g. general"`
}

func (s *Server) channelInfo(ctx context.Context, _ *mcp.CallToolRequest, in channelInput) (*mcp.CallToolResult, channelView, error) {
	if err := wire.ValidateChannel(in.Channel); err != nil {
		return nil, channelView{}, fmt.Errorf("%w: %w; name a channel such as general", ErrInvalidArgument, err)
	}
	if err := s.online("read the channel " + in.Channel); err != nil {
		return nil, channelView{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	list, err := s.e.Channels(ctx)
	if err != nil {
		return nil, channelView{}, meshError("read the channel "+in.Channel, err)
	}
	name := wire.SanitizeChannel(in.Channel)
	c, ok := list.Channel(name)
	if !ok {
		if _, joined := s.e.JoinStatus(name); !joined {
			return nil, channelView{}, fmt.Errorf("%w: %q has no messages and no configuration; cotal_channels lists the channels",
				ErrUnknownChannel, name)
		}
		c = endpoint.ChannelInfo{Name: name, Class: wire.EffectiveClass(nil, list.Defaults),
			Replay: wire.EffectiveReplay(nil, list.Defaults), ReplayWindow: wire.EffectiveReplayWindow(nil, list.Defaults)}
	}
	return nil, s.channelView(c), nil
}

type joinView struct {
	Channel    string `json:"channel"`
	State      string `json:"state"`
	Class      string `json:"class"`
	Backfilled int    `json:"backfilled"`
	Note       string `json:"note,omitempty"`
	// Description and Instructions are the channel's registry text, fenced by operatorNote.
	Description  string `json:"description,omitempty"`
	Instructions string `json:"instructions,omitempty"`
}

func (s *Server) join(ctx context.Context, _ *mcp.CallToolRequest, in channelInput) (*mcp.CallToolResult, joinView, error) {
	if err := wire.ValidatePublishChannel(in.Channel); err != nil {
		return nil, joinView{}, fmt.Errorf("%w: %w; join one concrete channel such as general", ErrInvalidArgument, err)
	}
	if err := s.online("join " + in.Channel); err != nil {
		return nil, joinView{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	r, err := s.e.Join(ctx, in.Channel)
	if errors.Is(err, endpoint.ErrJoinRefused) {
		return nil, joinView{}, fmt.Errorf("the mesh refused to let you read %q: it is outside your credential's read ACL; "+
			"join a channel it allows (cotal_channels), or ask whoever runs the mesh for a credential that may read it", in.Channel)
	}
	if err != nil {
		return nil, joinView{}, meshError("join "+in.Channel, err)
	}
	v := joinView{Channel: termsafe.String(r.Channel), State: termsafe.String(string(r.State)), Class: termsafe.String(string(r.Class)),
		Backfilled: r.Backfilled, Note: termsafe.String(r.Reason)}
	if r.Backfilled > 0 {
		v.Note = fmt.Sprintf("%d earlier messages are in your inbox, marked as history", r.Backfilled)
	}
	v.Description, v.Instructions = s.channelNotes(ctx, r.Channel)
	return nil, v, nil
}

func (s *Server) leave(ctx context.Context, _ *mcp.CallToolRequest, in channelInput) (*mcp.CallToolResult, channelsView, error) {
	if err := s.online("leave " + in.Channel); err != nil {
		return nil, channelsView{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	err := s.e.Leave(ctx, in.Channel)
	if errors.Is(err, endpoint.ErrNotJoined) {
		return nil, channelsView{}, fmt.Errorf("you have not joined %q; cotal_channels shows the channels you joined", in.Channel)
	}
	if err != nil {
		return nil, channelsView{}, meshError("leave "+in.Channel, err)
	}
	return nil, channelsView{Channels: []channelView{}, Joined: joined(s.e)}, nil
}

// joined is the channels e joined, escaped by termsafe.
func joined(e *endpoint.Endpoint) []string {
	out := []string{}
	for _, ch := range e.Joined() {
		out = append(out, termsafe.String(ch))
	}
	return out
}

type historyInput struct {
	Channel string `json:"channel" jsonschema:"the channel, e.g. general"`
	Limit   int    `json:"limit,omitempty" jsonschema:"how many of the most recent messages; default 20"`
}

type historyView struct {
	Channel  string         `json:"channel"`
	Messages []InboxMessage `json:"messages"`
}

func (s *Server) history(ctx context.Context, _ *mcp.CallToolRequest, in historyInput) (*mcp.CallToolResult, historyView, error) {
	limit := in.Limit
	switch {
	case limit == 0:
		limit = DefaultHistoryLimit
	case limit < 0:
		return nil, historyView{}, fmt.Errorf("%w: limit %d; pass a positive number or leave it out for %d", ErrInvalidArgument, limit, DefaultHistoryLimit)
	}
	limit = min(limit, MaxHistoryLimit)
	if err := s.online("read the history of " + in.Channel); err != nil {
		return nil, historyView{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	ds, err := s.e.History(ctx, in.Channel, limit)
	switch {
	case errors.Is(err, endpoint.ErrReadRefused):
		return nil, historyView{}, fmt.Errorf("the mesh refused to show %q: it is outside your credential's read ACL; "+
			"read a channel it allows (cotal_channels)", in.Channel)
	case errors.Is(err, endpoint.ErrInvalidRead):
		return nil, historyView{}, fmt.Errorf("%w: %w; name a channel such as general", ErrInvalidArgument, err)
	case err != nil:
		return nil, historyView{}, meshError("read the history of "+in.Channel, err)
	}
	v := historyView{Channel: termsafe.String(wire.SanitizeChannel(in.Channel)), Messages: make([]InboxMessage, 0, len(ds))}
	for _, d := range ds {
		v.Messages = append(v.Messages, inboxMessage(d))
	}
	s.showSenders(ctx, v.Messages)
	return nil, v, nil
}
