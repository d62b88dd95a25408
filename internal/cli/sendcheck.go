package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/suggest"
	"github.com/cotal-go/cotal/wire"
)

// errNewChannel: a send names a channel the space does not know, without --create.
var errNewChannel = errors.New("no such channel")

// checkChannel refuses a send to a channel the space does not know: one with no retained
// message and no registry entry (SPEC §7) that the sending credential's own grants do not name.
// Such a target is most often a typo, a name without its @ or a shortened instance id, and
// sending would start a channel no one reads; the error suggests what was probably meant.
func checkChannel(ctx context.Context, e *endpoint.Endpoint, s *session, channel string) error {
	ctx, cancel := context.WithTimeout(ctx, readWait)
	defer cancel()
	stop := s.waitFor("list the channels of space "+e.Space(), readWait)
	list, err := e.Channels(ctx)
	stop()
	if err != nil {
		return fmt.Errorf("check that channel %q exists: %w", channel, err)
	}
	ch := wire.SanitizeChannel(channel)
	if c, ok := list.Channel(ch); ok && (c.Messages > 0 || c.Config != nil) {
		return nil
	}
	// A channel the caller's own credential was minted to post to (--allow-publish) is meant.
	if !s.minted && slices.Contains(s.cred.PublishACL, ch) {
		return nil
	}
	known := make([]string, 0, len(list.Channels))
	for _, c := range list.Channels {
		known = append(known, c.Name)
	}
	return fmt.Errorf("%w %q in space %s: it has no message and no config; "+
		"`cotal channels list` shows the channels, and --create starts a new one%s",
		errNewChannel, channel, e.Space(), suggest.DidYouMean(targetGuesses(ctx, e, channel, known)))
}

// targetGuesses are the valid targets close to a mistyped one: existing channels, online
// instances by @name, and instance ids it is the start of.
func targetGuesses(ctx context.Context, e *endpoint.Endpoint, typed string, channels []string) []string {
	guesses := suggest.Close(wire.SanitizeChannel(typed), channels)
	if waitRoster(ctx, e) != nil {
		return guesses
	}
	for _, p := range e.Roster().Snapshot() {
		id := p.Presence.Card.ID
		if p.Online && id != e.ID() && len(typed) >= 4 && strings.HasPrefix(id, strings.ToUpper(typed)) {
			guesses = append(guesses, id)
		}
	}
	return append(guesses, suggest.AtNames(suggest.Close(typed, onlineNames(e)))...)
}

// waitRoster waits, bounded by rosterWait, for the roster's first complete read.
func waitRoster(ctx context.Context, e *endpoint.Endpoint) error {
	ctx, cancel := context.WithTimeout(ctx, rosterWait)
	defer cancel()
	select {
	case <-e.Roster().Loaded():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("the roster did not load within %s: %w", rosterWait, ctx.Err())
	}
}
