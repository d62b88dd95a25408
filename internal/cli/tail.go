package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/wire"
)

// tailBuffer is how many copies wait between the connection and the terminal; a slower
// terminal holds the connection's readers back rather than losing copies.
const tailBuffer = 4096

// wireCopy is one copy read off a raw subscription.
type wireCopy struct {
	subject string
	data    []byte
}

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
		ValidArgsFunction: cobra.NoFileCompletions,
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
	want := mintFor{command: "tail", profile: "admin", lifetime: streamingLifetime}
	s, err := openSession(cmd, f, want)
	if err != nil {
		return err
	}
	defer s.close(want)
	p := newPrinter(cmd.OutOrStdout(), cmd.ErrOrStderr(), f.asJSON, true)
	if s.cred.profile == "agent" {
		return tailAsAgent(cmd, s, p, channels, history)
	}
	return tailRaw(cmd, s, p, channels, history)
}

// tailRaw follows core subscriptions on a read-only connection: the chat filter of each
// channel, or with none everything the profile reads (admin: chat, DMs and anycasts).
func tailRaw(cmd *cobra.Command, s *session, p *printer, channels []string, history int) error {
	r, err := s.dialReader()
	if err != nil {
		return err
	}
	defer r.close()
	ctx := cmd.Context()
	copies := make(chan wireCopy, tailBuffer)
	subjects := rawSubjects(r.names, s.cred.profile, channels)
	for _, subject := range subjects {
		sub, err := r.subscribe(ctx, subject, func(m *nats.Msg) {
			select {
			case copies <- wireCopy{m.Subject, m.Data}:
			case <-ctx.Done():
			}
		})
		if err != nil {
			return aclError(err, subject, s)
		}
		defer func() { _ = sub.Unsubscribe() }()
	}
	if len(channels) == 0 {
		channels = []string{">"}
	}
	if err := printHistory(ctx, r, p, channels, history); err != nil {
		return aclError(err, "", s)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "following %s; Ctrl-C to stop\n", s.describe())
	lost := closedConn(r.nc)
	for {
		select {
		case <-ctx.Done():
			return nil
		case c := <-copies:
			if err := p.printWire(c.subject, c.data, false, 0); err != nil {
				return err
			}
		case <-lost:
			return fmt.Errorf("lost the connection to the mesh: %v; run tail again", r.nc.LastError())
		}
	}
}

// rawSubjects are the live subjects a read-only tail subscribes to.
func rawSubjects(n wire.Names, profile string, channels []string) []string {
	var out []string
	for _, ch := range channels {
		out = append(out, n.ChatFilter(ch))
	}
	if len(out) > 0 {
		return out
	}
	out = []string{n.ChatFilter(">")}
	if profile == "admin" || profile == "" {
		// SPEC Appendix B: admin's sub.allow is the whole space, DMs and anycasts included.
		out = append(out, n.Prefix()+".inst.>", n.Prefix()+".svc.>")
	}
	return out
}

// closedConn is closed once nc is closed for good.
func closedConn(nc *nats.Conn) <-chan struct{} {
	done := make(chan struct{})
	if nc.IsClosed() {
		close(done)
		return done
	}
	nc.SetClosedHandler(func(*nats.Conn) { close(done) })
	return done
}

// printHistory prints the last n retained messages across channels, oldest first.
func printHistory(ctx context.Context, r *reader, p *printer, channels []string, n int) error {
	if n == 0 {
		return nil
	}
	var lists [][]stored
	for _, ch := range channels {
		l, err := r.history(ctx, ch, n)
		if err != nil {
			return err
		}
		lists = append(lists, l)
	}
	for _, m := range lastOf(lists, n) {
		if err := p.printWire(m.subject, m.data, true, m.seq); err != nil {
			return err
		}
	}
	return nil
}

// aclError turns a refused subscription or history read into what to do about it.
func aclError(err error, subject string, s *session) error {
	if !errors.Is(err, errOutsideACL) {
		return err
	}
	what := "a channel"
	if subject != "" {
		what = subject
	}
	return fmt.Errorf("the mesh refused to let %q read %s (%w); name channels inside its allowSubscribe, or mint a credential that covers them (`cotal auth mint --allow-subscribe CHANNEL`)",
		s.cred.name, what, err)
}

// tailAsAgent connects as the agent of the credential (SPEC §12): it joins each channel,
// which backfills, subscribes and on a durable channel establishes membership, and prints
// every delivery: channel copies, DMs, anycasts and durable copies.
func tailAsAgent(cmd *cobra.Command, s *session, p *printer, channels []string, history int) error {
	ctx := cmd.Context()
	copies := make(chan endpoint.Delivery, tailBuffer)
	e, err := endpoint.Connect(ctx, endpoint.Options{Link: s.raw, Creds: s.creds, Kind: wire.CardKindEndpoint,
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
		return s.connectError(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = e.Close(ctx)
	}()
	r, err := readerOn(e)
	if err != nil {
		return err
	}
	if len(channels) == 0 {
		if channels, err = readGrants(s.creds); err != nil {
			return err
		}
	}
	if channels, err = concreteChannels(ctx, r, channels); err != nil {
		return err
	}
	if err := joinAll(ctx, cmd.ErrOrStderr(), e, channels); err != nil {
		return aclError(err, "", s)
	}
	if err := printHistory(ctx, r, p, channels, history); err != nil {
		return aclError(err, "", s)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "following %s; Ctrl-C to stop\n", s.describe())
	for {
		select {
		case <-ctx.Done():
			return nil
		case d := <-copies:
			it := item{Kind: d.Meta.Kind, Channel: d.Meta.Channel, Durable: d.Meta.Durable, Message: d.Message}
			if err := p.print(it); err != nil {
				return err
			}
		case <-e.Done():
			return fmt.Errorf("lost the connection to the mesh: %v; run tail again", e.Err())
		}
	}
}

// joinAll joins each channel and says on stderr how it joined (SPEC §7 join states).
func joinAll(ctx context.Context, w io.Writer, e *endpoint.Endpoint, channels []string) error {
	for _, ch := range channels {
		jctx, cancel := context.WithTimeout(ctx, readWait)
		res, err := e.Join(jctx, ch)
		cancel()
		if errors.Is(err, endpoint.ErrJoinRefused) {
			return fmt.Errorf("join %s: %w: %v", ch, errOutsideACL, err)
		}
		if err != nil {
			return fmt.Errorf("join %s: %w", ch, err)
		}
		fmt.Fprintf(w, "%s: %s\n", res.Channel, res.State)
	}
	return nil
}

// readGrants are the channel patterns of an agent credential's read ACL, taken from the chat
// subscriptions its JWT allows (SPEC §9 item 2: one cotal.<s>.chat.*.<channel> per entry).
func readGrants(creds []byte) ([]string, error) {
	token, err := jwt.ParseDecoratedJWT(creds)
	if err != nil {
		return nil, err
	}
	claims, err := jwt.DecodeUserClaims(token)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, subject := range claims.Sub.Allow {
		toks := strings.SplitN(subject, ".", 5)
		if len(toks) == 5 && toks[0] == "cotal" && toks[2] == "chat" && toks[3] == "*" {
			out = append(out, toks[4])
		}
	}
	return out, nil
}

// concreteChannels are the channels an agent joins for patterns: each concrete one as is,
// and every channel with retained messages that a wildcard one covers (SPEC §7: a join
// target is concrete).
func concreteChannels(ctx context.Context, r *reader, patterns []string) ([]string, error) {
	counts, err := r.chatCounts(ctx, ">")
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, p := range patterns {
		if wire.ValidatePublishChannel(p) == nil {
			set[p] = true
		}
		for ch := range counts {
			if wire.MatchChannel(p, ch) {
				set[ch] = true
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
