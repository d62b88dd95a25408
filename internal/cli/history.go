package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

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
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: cobra.NoFileCompletions,
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
	want := mintFor{command: "history", profile: "admin", lifetime: oneShotLifetime}
	return withReader(cmd, f, want, func(s *session, r *reader) error {
		return showHistory(cmd, f, s, r, channel, limit)
	})
}

func showHistory(cmd *cobra.Command, f *clientFlags, s *session, r *reader, channel string, limit int) error {
	ctx := cmd.Context()
	name := wire.SanitizeChannel(channel)
	if err := requireChannel(cmd, r, name); err != nil {
		return err
	}
	msgs, err := r.history(ctx, name, limit)
	if err != nil {
		return aclError(err, channel, s)
	}
	p := newPrinter(cmd.OutOrStdout(), cmd.ErrOrStderr(), f.asJSON, false)
	for _, m := range msgs {
		if err := p.printWire(m.subject, m.data, true, m.seq); err != nil {
			return err
		}
	}
	return nil
}

// requireChannel refuses a channel with no retained message and no registry entry, which is
// most often a typo.
func requireChannel(cmd *cobra.Command, r *reader, channel string) error {
	counts, err := r.chatCounts(cmd.Context(), channel)
	if err != nil {
		return err
	}
	if counts[channel] > 0 {
		return nil
	}
	configs, _, err := r.registry(cmd.Context())
	if err != nil {
		return err
	}
	if configs[channel] != nil {
		return nil
	}
	return fmt.Errorf("%w %q: space %s holds no message on it and no config for it; `cotal channels list` shows the channels",
		errUnknownChannel, channel, r.names.Space())
}
