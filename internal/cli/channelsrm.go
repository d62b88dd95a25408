package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/suggest"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

func newChannelsRmCmd() *cobra.Command {
	var spaceName string
	var asJSON, force bool
	cmd := &cobra.Command{
		Use:   "rm CHANNEL",
		Short: "Remove a channel: its messages and its config (privileged: beside `cotal up` only)",
		Long: `rm deletes every message CHAT retains on CHANNEL, from every sender, and its registry
entry (SPEC §7), as when a typo started a channel. It cannot be undone, so it asks first on a
terminal; without one it refuses unless --force is given, which also skips the question. A
channel with no message and no config is refused. Members joined to the channel stay joined,
and copies the durable backstop already holds for them are still delivered. It goes through the
admin socket of the mesh on the data directory; exit codes as in "cotal help exit-codes".`,
		Example: `  cotal channels rm genral
  cotal channels rm genral --force   # in a script: no question`,
		Args:              exactArgs("CHANNEL"),
		ValidArgsFunction: completeChannels(false),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if err := wire.ValidatePublishChannel(args[0]); err != nil {
				return err
			}
			if !force && !onTerminal(cmd) {
				return fmt.Errorf("refusing to delete #%s without a terminal to ask on: pass --force (-f) to delete without asking", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if !force {
				if err := confirmRemoval(cmd, spaceName, args[0]); err != nil {
					return err
				}
			}
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
	cmd.Flags().BoolVarP(&force, "force", "f", false, "delete without asking (required without a terminal)")
	return cmd
}

// confirmRemoval asks on the terminal whether to delete channel, saying how many messages it
// holds, and returns nil only on a yes. An unknown channel is refused before the question.
func confirmRemoval(cmd *cobra.Command, spaceName, channel string) error {
	list, err := localChannels(cmd, spaceName)
	if err != nil {
		return withHint(err)
	}
	i := slices.IndexFunc(list, func(c endpoint.ChannelInfo) bool { return c.Name == channel })
	if i < 0 {
		return unknownChannel(cmd, spaceName, channel, space.ErrUnknownChannel)
	}
	n, config := list[i].Messages, ""
	if list[i].Config != nil {
		config = " and its config"
	}
	q := fmt.Sprintf("Really delete every message of #%s (%d %s)%s in space %s? It cannot be undone.",
		channel, n, plural(n, "message", "messages"), config, spaceName)
	yes, err := askYes(cmd, q)
	if err != nil {
		return err
	}
	if !yes {
		return fmt.Errorf("kept #%s: the deletion was not confirmed", channel)
	}
	return nil
}

// localChannels lists the channels of the space through a reader beside the mesh, as
// `cotal channels list` does.
func localChannels(cmd *cobra.Command, spaceName string) ([]endpoint.ChannelInfo, error) {
	want := mintFor{command: "channels", profile: wire.ProfileAdmin, lifetime: oneShotLifetime}
	s := &session{}
	defer s.close(want)
	if err := s.openLocal(cmd, spaceName, want); err != nil {
		return nil, err
	}
	e, err := s.connect(cmd.Context(), endpoint.Options{Passive: true})
	if err != nil {
		return nil, err
	}
	defer closeEndpoint(e)
	ctx, cancel := context.WithTimeout(cmd.Context(), readWait)
	defer cancel()
	list, err := e.Channels(ctx)
	return list.Channels, err
}

// unknownChannel says that channel, which rm was asked to remove, does not exist, and names
// the channels of the space close to it. If listing them fails, the error goes without
// suggestions.
func unknownChannel(cmd *cobra.Command, spaceName, channel string, err error) error {
	var known []string
	if list, lerr := localChannels(cmd, spaceName); lerr == nil {
		for _, c := range list {
			known = append(known, c.Name)
		}
	}
	return reworded{err: err, msg: fmt.Sprintf("unknown channel %q: no such channel in space %s (no message, no config), "+
		"so there is nothing to remove; `cotal channels list` shows the channels%s", channel, spaceName, suggest.DidYouMean(suggest.Close(channel, known)))}
}

// plural picks the word for n things.
func plural(n uint64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
