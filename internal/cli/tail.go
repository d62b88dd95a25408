package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/termsafe"
	"github.com/cotal-go/cotal/wire"
)

// tailBuffer is how many copies wait between the connection and the terminal; a slower
// terminal holds the connection's readers back rather than losing copies.
const tailBuffer = 4096

func newTailCmd() *cobra.Command {
	var f clientFlags
	var history int
	cmd := &cobra.Command{
		Use:   "tail [CHANNEL ...]",
		Short: "Print messages as they arrive, until Ctrl-C",
		Long: `tail prints each message as it arrives: time, channel (or dm, svc:ROLE), sender and
text. With --history N it first prints the last N retained messages. Colour is used on a
terminal only, never with --json or NO_COLOR; --json prints one JSON object per line.

With no CHANNEL it follows everything the credential may read: beside "cotal up" an admin
view of every channel, DM and anycast of the space. CHANNEL may be a pattern such as team.>;
an agent joins each channel with messages that the pattern covers.

With an agent credential (--creds) tail connects as that agent: it appears in the roster,
joins the channels (durable channels keep copies for it), and receives and acknowledges
its DMs and durable copies. Do not tail with the credential of an agent that is running;
use an observer or admin credential to watch without taking anything.` + connectHelp,
		ValidArgsFunction: completeChannels(true),
		Example: `  cotal tail
  cotal tail general --history 20
  cotal tail --link cotal://host:4222/main --creds alice.creds`,
		PreRunE: func(_ *cobra.Command, args []string) error {
			for _, ch := range args {
				if err := wire.ValidateChannel(ch); err != nil {
					return err
				}
			}
			if history < 0 {
				return fmt.Errorf("--history %d: pass a count of messages, 0 for none", history)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTail(cmd, &f, args, history)
		},
	}
	addClientFlags(cmd, &f)
	cmd.Flags().IntVar(&history, "history", 0, "print the last N retained messages first")
	return cmd
}

func runTail(cmd *cobra.Command, f *clientFlags, channels []string, history int) error {
	want := mintFor{command: "tail", profile: wire.ProfileAdmin, lifetime: streamingLifetime}
	s, err := openSession(cmd, f, want)
	if err != nil {
		return err
	}
	defer s.close(want)
	p := newPrinter(cmd.OutOrStdout(), cmd.ErrOrStderr(), f.asJSON, true)
	p.stopped = cmd.Context().Done()
	if s.cred.Profile == wire.ProfileAgent {
		return tailAsAgent(cmd, s, p, channels, history)
	}
	return tailPassive(cmd, s, p, channels, history)
}

// tailPassive follows live traffic on a passive Endpoint: the channels named, or with none
// everything the profile reads (admin: chat, DMs and anycasts; SPEC Appendix B).
func tailPassive(cmd *cobra.Command, s *session, p *printer, channels []string, history int) error {
	ctx := cmd.Context()
	e, err := s.connect(ctx, endpoint.Options{Passive: true, OnEvent: p.reportConnection})
	if err != nil {
		return err
	}
	defer closeEndpoint(e)
	p.self, p.nameOf, p.sender = e.ID(), rosterName(e), senderNames(ctx, e)
	copies := make(chan endpoint.Delivery, tailBuffer)
	opts := endpoint.FollowOptions{Channels: channels,
		Unicast: len(channels) == 0 && (s.cred.Profile == wire.ProfileAdmin || s.cred.Profile == "")}
	err = e.Follow(ctx, opts, func(d endpoint.Delivery) {
		select {
		case copies <- d:
		case <-ctx.Done():
		}
	})
	if err != nil {
		return aclError(err, strings.Join(channels, ", "), s)
	}
	if len(channels) == 0 {
		channels = []string{">"}
	}
	if err := printHistory(ctx, e, p, channels, history); err != nil {
		return aclError(err, "", s)
	}
	return printLive(cmd, s, e, p, copies)
}

// printLive prints copies as they arrive until Ctrl-C or the connection is lost for good.
func printLive(cmd *cobra.Command, s *session, e *endpoint.Endpoint, p *printer, copies <-chan endpoint.Delivery) error {
	fmt.Fprintf(cmd.ErrOrStderr(), "following %s; Ctrl-C to stop\n", s.describe())
	for {
		select {
		case <-cmd.Context().Done():
			return nil
		case d := <-copies:
			if err := p.print(itemOf(d)); err != nil {
				return err
			}
		case <-e.Done():
			err := e.Err()
			if errors.Is(err, endpoint.ErrCredentialExpired) || errors.Is(err, endpoint.ErrCredentialRefused) {
				return fmt.Errorf("the mesh ended the connection: %w", err)
			}
			return fmt.Errorf("lost the connection to the mesh: %v; run tail again", err)
		}
	}
}

// printHistory prints the last n retained messages across channels, oldest first.
func printHistory(ctx context.Context, e *endpoint.Endpoint, p *printer, channels []string, n int) error {
	if n == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, readWait)
	defer cancel()
	var lists [][]endpoint.Delivery
	for _, ch := range channels {
		l, err := e.History(ctx, ch, n)
		if err != nil {
			return err
		}
		lists = append(lists, l)
	}
	for _, d := range lastOf(lists, n) {
		if err := p.print(itemOf(d)); err != nil {
			return err
		}
	}
	return nil
}

// tailAsAgent connects as the agent of the credential (SPEC §12): it joins each channel,
// which backfills, subscribes and on a durable channel establishes membership, and prints
// every delivery: channel copies, DMs, anycasts and durable copies.
func tailAsAgent(cmd *cobra.Command, s *session, p *printer, channels []string, history int) error {
	ctx := cmd.Context()
	copies := make(chan endpoint.Delivery, tailBuffer)
	e, err := s.connect(ctx, endpoint.Options{OnEvent: p.reportConnection, SkipCredentialChannels: true,
		Handler: func(ctx context.Context, d endpoint.Delivery) error {
			if d.Meta.Historical {
				return nil // history is read below, limited to --history
			}
			select {
			case copies <- d:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}})
	if err != nil {
		return err
	}
	defer closeEndpoint(e)
	p.self, p.nameOf, p.sender = e.ID(), rosterName(e), senderNames(ctx, e)
	if len(channels) == 0 {
		channels = s.cred.ReadACL
	}
	if channels, err = concreteChannels(ctx, e, channels); err != nil {
		return err
	}
	if err := joinAll(ctx, cmd.ErrOrStderr(), e, channels); err != nil {
		return aclError(err, "", s)
	}
	if err := printHistory(ctx, e, p, channels, history); err != nil {
		return aclError(err, "", s)
	}
	return printLive(cmd, s, e, p, copies)
}

// joinAll joins each channel and says on stderr how it joined (SPEC §7 join states).
func joinAll(ctx context.Context, w io.Writer, e *endpoint.Endpoint, channels []string) error {
	for _, ch := range channels {
		jctx, cancel := context.WithTimeout(ctx, readWait)
		res, err := e.Join(jctx, ch)
		cancel()
		if err != nil {
			return fmt.Errorf("join %s: %w", ch, err)
		}
		fmt.Fprintf(w, "%s: %s\n", termsafe.String(res.Channel), termsafe.String(string(res.State)))
	}
	return nil
}

// concreteChannels are the channels an agent joins for patterns: each concrete one as is,
// and every channel with retained messages that a wildcard one covers (SPEC §7: a join
// target is concrete).
func concreteChannels(ctx context.Context, e *endpoint.Endpoint, patterns []string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, readWait)
	defer cancel()
	list, err := e.Channels(ctx)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, p := range patterns {
		if wire.ValidatePublishChannel(p) == nil {
			set[p] = true
		}
		for _, ch := range list.Channels {
			if ch.Messages > 0 && wire.MatchChannel(p, ch.Name) {
				set[ch.Name] = true
			}
		}
	}
	if len(set) == 0 {
		return nil, fmt.Errorf("no channel with messages matches %s; name the channels to tail", strings.Join(patterns, ", "))
	}
	out := make([]string, 0, len(set))
	for ch := range set {
		out = append(out, ch)
	}
	sort.Strings(out)
	return out, nil
}
