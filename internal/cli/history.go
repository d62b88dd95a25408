package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/wire"
)

// errUnknownChannel: a channel has no retained message and no registry entry.
var errUnknownChannel = errors.New("unknown channel")

func newHistoryCmd() *cobra.Command {
	var f clientFlags
	var limit int
	cmd := &cobra.Command{
		Use:   "history CHANNEL",
		Short: "Print the last messages retained on a channel",
		Long: `history prints the last --limit messages CHAT retains for CHANNEL, oldest first. CHAT keeps
up to 1000 messages per sender and channel. The read is bounded by the credential's read ACL
(SPEC §7, §9): an agent reads only channels its allowSubscribe covers.` + connectHelp,
		Example: `  cotal history general --limit 50
  cotal history general --json | jq -r '.message.parts[0].text'`,
		Args:              exactArgs("CHANNEL"),
		ValidArgsFunction: completeChannels(false),
		PreRunE: func(_ *cobra.Command, args []string) error {
			if limit < 1 {
				return fmt.Errorf("--limit %d: pass a positive count", limit)
			}
			return wire.ValidatePublishChannel(args[0])
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runHistory(cmd, &f, args[0], limit)
		},
	}
	addClientFlags(cmd, &f)
	cmd.Flags().IntVar(&limit, "limit", 20, "how many of the last messages to print")
	return cmd
}

func runHistory(cmd *cobra.Command, f *clientFlags, channel string, limit int) error {
	want := mintFor{command: "history", profile: wire.ProfileAdmin, lifetime: oneShotLifetime}
	s, err := openSession(cmd, f, want)
	if err != nil {
		return err
	}
	defer s.close(want)
	p := newPrinter(cmd.OutOrStdout(), cmd.ErrOrStderr(), f.asJSON, false)
	e, err := s.connect(cmd.Context(), endpoint.Options{Passive: true, OnEvent: p.reportDropped})
	if err != nil {
		return err
	}
	defer closeEndpoint(e)
	p.sender = senderNames(cmd.Context(), e)
	return showHistory(cmd.Context(), s, e, p, channel, limit)
}

func showHistory(ctx context.Context, s *session, e *endpoint.Endpoint, p *printer, channel string, limit int) error {
	ctx, cancel := context.WithTimeout(ctx, readWait)
	defer cancel()
	defer s.waitFor("read the history of "+channel, readWait)()
	name := wire.SanitizeChannel(channel)
	if err := requireChannel(ctx, e, name); err != nil {
		return err
	}
	msgs, err := e.History(ctx, name, limit)
	if err != nil {
		return aclError(err, channel, s)
	}
	for _, d := range msgs {
		if err := p.print(itemOf(d)); err != nil {
			return err
		}
	}
	return nil
}

// requireChannel refuses a channel with no retained message and no registry entry, which is
// most often a typo.
func requireChannel(ctx context.Context, e *endpoint.Endpoint, channel string) error {
	list, err := e.Channels(ctx)
	if err != nil {
		return err
	}
	if ch, ok := list.Channel(channel); ok && (ch.Messages > 0 || ch.Config != nil) {
		return nil
	}
	return fmt.Errorf("%w %q: space %s holds no message on it and no config for it; `cotal channels list` shows the channels",
		errUnknownChannel, channel, e.Space())
}
