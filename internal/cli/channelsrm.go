package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/suggest"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

func newChannelsRmCmd() *cobra.Command {
	var spaceName string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "rm CHANNEL",
		Short: "Remove a channel: its messages and its config (privileged: beside `cotal up` only)",
		Long: `rm deletes every message CHAT retains on CHANNEL, from every sender, and its registry
entry (SPEC §7), as when a typo started a channel. It cannot be undone. A channel with no
message and no config is refused. Members joined to the channel stay joined, and copies the
durable backstop already holds for them are still delivered. It goes through the admin socket of the mesh on the data
directory; exit codes as in "cotal help exit-codes".`,
		Example:           `  cotal channels rm genral`,
		Args:              exactArgs("CHANNEL"),
		ValidArgsFunction: cobra.NoFileCompletions,
		PreRunE: func(_ *cobra.Command, args []string) error {
			return wire.ValidatePublishChannel(args[0])
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := localMesh(cmd)
			if err != nil {
				return err
			}
			rm, err := c.RemoveChannel(cmd.Context(), spaceName, args[0])
			if errors.Is(err, space.ErrUnknownChannel) {
				return unknownChannel(cmd, spaceName, args[0], err)
			}
			if err != nil {
				return withHint(err)
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(rm)
			}
			config := "no config"
			if rm.Config {
				config = "its config"
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "removed channel %s from space %s: %d %s and %s\n",
				rm.Channel, spaceName, rm.Messages, plural(rm.Messages, "message", "messages"), config)
			return err
		},
	}
	addAdminFlags(cmd, &asJSON)
	cmd.Flags().StringVar(&spaceName, "space", "main", "space")
	return cmd
}

// unknownChannel says that channel, which rm was asked to remove, does not exist, and names
// the channels of the space close to it. Listing them takes a reader beside the mesh, as
// `cotal channels list` does; if that fails, the error goes without suggestions.
func unknownChannel(cmd *cobra.Command, spaceName, channel string, err error) error {
	var guesses []string
	want := mintFor{command: "channels", profile: "admin", lifetime: oneShotLifetime}
	s := &session{}
	defer s.close(want)
	if s.openLocal(cmd, spaceName, want) == nil {
		if e, cerr := s.connect(cmd.Context(), endpoint.Options{Passive: true}); cerr == nil {
			ctx, cancel := context.WithTimeout(cmd.Context(), readWait)
			if list, lerr := e.Channels(ctx); lerr == nil {
				var known []string
				for _, c := range list.Channels {
					known = append(known, c.Name)
				}
				guesses = suggest.Close(channel, known)
			}
			cancel()
			closeEndpoint(e)
		}
	}
	return reworded{err: err, msg: fmt.Sprintf("unknown channel %q: no such channel in space %s (no message, no config), "+
		"so there is nothing to remove; `cotal channels list` shows the channels%s", channel, spaceName, suggest.DidYouMean(guesses))}
}

// plural picks the word for n things.
func plural(n uint64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
