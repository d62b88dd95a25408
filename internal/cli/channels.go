package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/termsafe"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

func newChannelsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "channels",
		Short: "List channels, set their replay, window, class and description, and remove them",
		Long: `channels lists the channels of a space with their message counts and config (SPEC §7),
changes that config, and removes a channel. Changing is privileged: "set", "default" and "rm"
work only beside "cotal up", through its admin socket, and the mesh's provisioner writes the
registry.`,
	}
	cmd.AddCommand(newChannelsListCmd(), newChannelsSetCmd(), newChannelsDefaultCmd(), newChannelsRmCmd())
	return cmd
}

// channelRow is one channel as `cotal channels list` prints it.
type channelRow struct {
	Channel      string              `json:"channel"`
	Messages     uint64              `json:"messages"`
	Config       *wire.ChannelConfig `json:"config,omitempty"`
	Class        wire.DeliveryClass  `json:"class"`
	Replay       bool                `json:"replay"`
	ReplayWindow string              `json:"replayWindow,omitempty"`
}

func newChannelsListCmd() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List channels: retained messages, effective class, replay and window, description",
		Long: `list shows every channel with retained messages or a registry entry, with the number of
messages CHAT retains for it and its effective config: the channel's own setting, else the
space default, else the SPEC §7 default (durable, replay on, no window).` + connectHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runChannelsList(cmd, &f)
		},
	}
	addClientFlags(cmd, &f)
	return cmd
}

func runChannelsList(cmd *cobra.Command, f *clientFlags) error {
	want := mintFor{command: "channels", profile: wire.ProfileAdmin, lifetime: oneShotLifetime}
	return withReader(cmd, f, want, func(_ *session, e *endpoint.Endpoint) error { return listChannels(cmd, f, e) })
}

func listChannels(cmd *cobra.Command, f *clientFlags, e *endpoint.Endpoint) error {
	ctx, cancel := context.WithTimeout(cmd.Context(), readWait)
	defer cancel()
	list, err := e.Channels(ctx)
	if err != nil {
		return err
	}
	rows := channelRows(list)
	if f.asJSON {
		return json.NewEncoder(cmd.OutOrStdout()).Encode(struct {
			Defaults *wire.ChannelDefaults `json:"defaults"`
			Channels []channelRow          `json:"channels"`
		}{list.Defaults, rows})
	}
	return printChannels(cmd.OutOrStdout(), list.Defaults, rows)
}

// channelRows are the channels of list as printed, in its order (by name).
func channelRows(list endpoint.ChannelList) []channelRow {
	rows := make([]channelRow, 0, len(list.Channels))
	for _, ch := range list.Channels {
		rows = append(rows, effectiveRow(ch.Name, ch.Messages, ch.Config, list.Defaults))
	}
	return rows
}

// effectiveRow is one channel with its effective config; with no config c, the defaults'.
func effectiveRow(ch string, messages uint64, c *wire.ChannelConfig, d *wire.ChannelDefaults) channelRow {
	row := channelRow{Channel: ch, Messages: messages, Config: c,
		Class: wire.EffectiveClass(c, d), Replay: wire.EffectiveReplay(c, d)}
	if w := wire.EffectiveReplayWindow(c, d); w > 0 {
		row.ReplayWindow = windowText(w, c, d)
	}
	return row
}

// windowText prints the effective replay window w as it was written in the registry.
func windowText(w time.Duration, c *wire.ChannelConfig, d *wire.ChannelDefaults) string {
	var written []string
	if c != nil {
		written = append(written, c.ReplayWindow)
	}
	if d != nil {
		written = append(written, d.ReplayWindow)
	}
	for _, s := range written {
		if got, err := wire.ParseReplayWindow(s); err == nil && got == w {
			return s
		}
	}
	return w.String()
}

func printChannels(w io.Writer, d *wire.ChannelDefaults, rows []channelRow) error {
	dr := effectiveRow("", 0, nil, d)
	fmt.Fprintf(w, "space defaults: class %s, replay %s, window %s\n", termsafe.String(string(dr.Class)), onOff(dr.Replay),
		termsafe.String(dash(dr.ReplayWindow)))
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "no channel has messages or config yet; `cotal send CHANNEL TEXT` creates one")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHANNEL\tMESSAGES\tCLASS\tREPLAY\tWINDOW\tDESCRIPTION")
	for _, r := range rows {
		desc := ""
		if r.Config != nil {
			desc = r.Config.Description
		}
		row(tw, r.Channel, fmt.Sprint(r.Messages), string(r.Class), onOff(r.Replay), dash(r.ReplayWindow), dash(desc))
	}
	return tw.Flush()
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// channelFlags are the config flags of set and default; only the ones given change anything.
type channelFlags struct {
	replay, window, class, description, instructions string
	create                                           bool
}

func addChannelFlags(cmd *cobra.Command, cf *channelFlags, text bool) {
	fs := cmd.Flags()
	fs.StringVar(&cf.replay, "replay", "", "history replay on join: true or false")
	fs.StringVar(&cf.window, "replay-window", "", "backfill horizon: "+durationUnits)
	fs.StringVar(&cf.class, "class", "", "delivery class: live or durable (SPEC §4)")
	_ = cmd.RegisterFlagCompletionFunc("replay", cobra.FixedCompletions([]string{"true", "false"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("class", cobra.FixedCompletions([]string{"live", "durable"}, cobra.ShellCompDirectiveNoFileComp))
	if text {
		fs.StringVar(&cf.description, "description", "", "one-line purpose, at most 200 characters")
		fs.StringVar(&cf.instructions, "instructions", "", "advisory usage text, at most 2000 characters")
		fs.BoolVar(&cf.create, "create", false, "configure a channel that has no message yet")
	}
}

// update builds the change from the flags the user set and validates it as SPEC §7 does, so
// a bad value is a usage error before anything is sent.
func (cf *channelFlags) update(cmd *cobra.Command, channel string) (space.ChannelUpdate, error) {
	u := space.ChannelUpdate{Channel: channel, Create: cf.create}
	set := func(name string) bool { return cmd.Flags().Changed(name) }
	if set("replay") {
		b, err := strconv.ParseBool(cf.replay)
		if err != nil {
			return u, fmt.Errorf("--replay %q: use true or false", cf.replay)
		}
		u.Replay = &b
	}
	if set("replay-window") {
		d, err := parseDuration(cf.window)
		if err != nil {
			return u, fmt.Errorf("--replay-window %q: %w", cf.window, err)
		}
		w := cf.window
		if _, err := wire.ParseReplayWindow(w); err != nil {
			w = replayWindowText(d) // written as SPEC §7 spells it
		}
		u.ReplayWindow = &w
	}
	if set("class") {
		c := wire.DeliveryClass(cf.class)
		u.DeliveryClass = &c
	}
	if set("description") {
		u.Description = &cf.description
	}
	if set("instructions") {
		u.Instructions = &cf.instructions
	}
	if u.Replay == nil && u.ReplayWindow == nil && u.DeliveryClass == nil && u.Description == nil && u.Instructions == nil {
		return u, fmt.Errorf("nothing to change: pass the fields to set (%s --help lists them)", cmd.CommandPath())
	}
	var c wire.ChannelConfig
	u.Apply(&c)
	return u, c.Validate()
}

func newChannelsSetCmd() *cobra.Command {
	var cf channelFlags
	var spaceName string
	var asJSON bool
	var u space.ChannelUpdate
	cmd := &cobra.Command{
		Use:   "set CHANNEL [--replay true|false] [--replay-window 24h] [--class live|durable] [--description TEXT] [--instructions TEXT]",
		Short: "Change a channel's config (privileged: beside `cotal up` only)",
		Long: `set changes the given fields of CHANNEL's registry entry and keeps the others (SPEC §7).
A channel with no message and no entry is refused, which catches typos; pass --create to
configure one before its first message. It goes through the admin socket of the mesh on
the data directory; exit codes as in "cotal help exit-codes".`,
		Example: `  cotal channels set general --description "team chat" --replay-window 7d
  cotal channels set alerts --class live --create`,
		Args:              exactArgs("CHANNEL"),
		ValidArgsFunction: completeChannels(false),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if err := wire.ValidatePublishChannel(args[0]); err != nil {
				return err
			}
			var err error
			u, err = cf.update(cmd, args[0])
			return err
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runChannelUpdate(cmd, "channel-set", spaceName, u, asJSON)
		},
	}
	addAdminFlags(cmd, &asJSON)
	cmd.Flags().StringVar(&spaceName, "space", "main", "space")
	addChannelFlags(cmd, &cf, true)
	return cmd
}

func newChannelsDefaultCmd() *cobra.Command {
	var cf channelFlags
	var spaceName string
	var asJSON bool
	var u space.ChannelUpdate
	cmd := &cobra.Command{
		Use:   "default [--replay true|false] [--replay-window 24h] [--class live|durable]",
		Short: "Change the space's channel defaults (privileged: beside `cotal up` only)",
		Long: `default changes the space-wide defaults under "=defaults" (SPEC §7), which apply to
every channel that does not set the field itself. It goes through the admin socket of the
mesh on the data directory; exit codes as in "cotal help exit-codes".`,
		Example: `  cotal channels default --class live
  cotal channels default --replay-window 24h`,
		Args: cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			u, err = cf.update(cmd, "")
			return err
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runChannelUpdate(cmd, "channel-defaults", spaceName, u, asJSON)
		},
	}
	addAdminFlags(cmd, &asJSON)
	cmd.Flags().StringVar(&spaceName, "space", "main", "space")
	addChannelFlags(cmd, &cf, false)
	return cmd
}

func runChannelUpdate(cmd *cobra.Command, op, spaceName string, u space.ChannelUpdate, asJSON bool) error {
	c, err := localMesh(cmd)
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	if op == "channel-defaults" {
		d, err := c.SetChannelDefaults(cmd.Context(), spaceName, u)
		if err != nil {
			return withHint(err)
		}
		if asJSON {
			return json.NewEncoder(w).Encode(d)
		}
		row := effectiveRow("", 0, nil, d)
		_, err = fmt.Fprintf(w, "space %s defaults: class %s, replay %s, window %s\n", spaceName, row.Class, onOff(row.Replay), dash(row.ReplayWindow))
		return err
	}
	cfg, err := c.SetChannel(cmd.Context(), spaceName, u)
	if errors.Is(err, space.ErrUnknownChannel) {
		// Of the commands that meet an unknown channel only set can configure a new one.
		return fmt.Errorf("%w; check the name (`cotal channels list` shows the channels), or pass --create to configure it before its first message", err)
	}
	if err != nil {
		return withHint(err)
	}
	if asJSON {
		return json.NewEncoder(w).Encode(cfg)
	}
	replay := "default"
	if cfg.Replay != nil {
		replay = onOff(*cfg.Replay)
	}
	_, err = fmt.Fprintf(w, "channel %s in space %s: replay %s, window %s, class %s, description %s\n",
		termsafe.String(wire.SanitizeChannel(u.Channel)), termsafe.String(spaceName), replay,
		termsafe.String(orDefault(cfg.ReplayWindow)), termsafe.String(orDefault(string(cfg.DeliveryClass))),
		termsafe.String(dash(cfg.Description)))
	return err
}

// orDefault stands in for a field the entry leaves to the space default.
func orDefault(s string) string {
	if s == "" {
		return "default"
	}
	return s
}
