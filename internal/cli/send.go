package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nats-io/nkeys"
	"github.com/spf13/cobra"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/suggest"
	"github.com/cotal-go/cotal/wire"
)

// sendWait bounds the publish and its acknowledgement.
const sendWait = 15 * time.Second

// rosterWait bounds the wait for the roster's first full view, to resolve @NAME.
const rosterWait = 5 * time.Second

// Send errors.
var (
	// errCannotSend: the credential's profile has no application publish (SPEC Appendix B).
	errCannotSend = errors.New("this credential cannot send")
)

// target is where `cotal send` delivers (SPEC §4): a channel, an instance by id or by its
// online display name, or a service role.
type target struct {
	kind    endpoint.MetaKind
	channel string
	name    string // @NAME, resolved against the roster, then the credentials (resolveName)
	id      string
	role    string
}

// looksLikeUserKey reports whether s has the shape of a user nkey (U and 55 base32
// characters), whatever its checksum: such a target is a mistyped id, not a channel name.
func looksLikeUserKey(s string) bool {
	if len(s) != 56 || s[0] != 'U' {
		return false
	}
	return strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") == ""
}

// parseTarget reads CHANNEL, @NAME, an instance id (a user nkey, SPEC §2) or svc:ROLE.
func parseTarget(s string) (target, error) {
	switch {
	case strings.HasPrefix(s, "svc:"):
		role := strings.TrimPrefix(s, "svc:")
		if role == "" || wire.Sanitize(role) != role {
			return target{}, fmt.Errorf("target %q: a role is letters, digits, '_' and '-' only", s)
		}
		return target{kind: endpoint.MetaAnycast, role: role}, nil
	case strings.HasPrefix(s, "@"):
		if len(s) == 1 {
			return target{}, fmt.Errorf("target %q: name the instance after the @, e.g. @alice", s)
		}
		return target{kind: endpoint.MetaDM, name: s[1:]}, nil
	case len(s) == 56 && strings.HasPrefix(s, "U") && nkeys.IsValidPublicUserKey(s):
		return target{kind: endpoint.MetaDM, id: s}, nil
	case looksLikeUserKey(s):
		return target{}, fmt.Errorf("target %q looks like an instance id but its checksum is wrong: "+
			"copy the id again from `cotal who` or `cotal auth list`", s)
	}
	if err := wire.ValidatePublishChannel(s); err != nil {
		return target{}, fmt.Errorf("target %q: %w; send to CHANNEL, @NAME, an instance id or svc:ROLE", s, err)
	}
	return target{kind: endpoint.MetaChannel, channel: s}, nil
}

func newSendCmd() *cobra.Command {
	var f clientFlags
	var create bool
	cmd := &cobra.Command{
		Use:   "send CHANNEL|@NAME|ID|svc:ROLE [TEXT|-]",
		Short: "Send a message to a channel, an instance or a service role",
		Long: `send publishes one text message and prints where JetStream stored it. Storage is
confirmed; delivery is not: a live recipient may be offline, a durable one gets it later.

Targets:
  CHANNEL     multicast on a concrete channel, e.g. general or team.backend
  @NAME       a DM to the one online instance with that display name ("cotal who"); beside
              "cotal up" also to an offline agent by the name of its credential, whose
              DMs wait for it
  ID          a DM to an instance id (U + 55 characters), online or not
  svc:ROLE    anycast to exactly one holder of the role
TEXT is read from standard input when it is absent or "-".

A channel the space does not know (no message, no config, not named by the credential's
--allow-publish) is refused as a likely typo, with suggestions; --create starts it.

Beside "cotal up" it mints a 5-minute agent credential allowed to post to CHANNEL; with
--creds it sends as that credential, which must be an agent whose --allow-publish covers
the channel.` + connectHelp,
		Example: `  cotal send general "hello, team"
  cotal send release-notes "first note" --create
  echo "build finished" | cotal send @alice
  cotal send svc:reviewer "please review PR 12" --link cotal://host:4222/main --creds bob.creds`,
		Args:              rangeArgs([]string{"CHANNEL|@NAME|ID|svc:ROLE"}, []string{"TEXT"}),
		ValidArgsFunction: completeAddresses,
		PreRunE: func(_ *cobra.Command, args []string) error {
			t, err := parseTarget(args[0])
			if err == nil && create && t.kind == endpoint.MetaChannel {
				err = checkNewChannelName(t.channel)
			}
			return err
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			t, _ := parseTarget(args[0])
			text, err := messageText(cmd.InOrStdin(), args[1:])
			if err != nil {
				return err
			}
			return runSend(cmd, &f, t, text, create)
		},
	}
	addClientFlags(cmd, &f)
	cmd.Flags().BoolVar(&create, "create", false, "start a new channel: send to a channel with no message and no config yet")
	return cmd
}

// checkNewChannelName refuses to start a channel under a name mint would refuse in a grant:
// sanitizing would store it under another name ("Bad Channel!" as Bad_Channel_), which no
// credential's --allow-publish can name as typed.
func checkNewChannelName(ch string) error {
	if err := wire.ValidatePolicyChannel(ch); err != nil {
		return fmt.Errorf("--create %q: %w (mint refuses it in --allow-publish too)", ch, err)
	}
	return nil
}

// messageText is the TEXT argument, or standard input for none or "-". Text of only
// whitespace is refused: it is an empty shell variable or a missing quote, not a message.
func messageText(stdin io.Reader, args []string) (string, error) {
	if len(args) == 1 && args[0] != "-" {
		if strings.TrimSpace(args[0]) == "" {
			return "", errors.New("nothing to send: TEXT is empty; pass the message, or - to read it from standard input")
		}
		return args[0], nil
	}
	data, err := io.ReadAll(stdin)
	if err != nil {
		return "", fmt.Errorf("read the message from standard input: %w", err)
	}
	text := strings.TrimRight(string(data), "\r\n")
	if strings.TrimSpace(text) == "" {
		return "", errors.New("nothing to send: standard input was empty; pass TEXT or pipe the message in")
	}
	return text, nil
}

func runSend(cmd *cobra.Command, f *clientFlags, t target, text string, create bool) error {
	want := mintFor{command: "send", profile: wire.ProfileAgent, lifetime: oneShotLifetime}
	if t.kind == endpoint.MetaChannel {
		want.publish = []string{wire.SanitizeChannel(t.channel)}
	}
	s, err := openSession(cmd, f, want)
	if err != nil {
		return err
	}
	defer s.close(want)
	if p := s.cred.Profile; s.creds != nil && p != "" && p != wire.ProfileAgent {
		return fmt.Errorf("%w: %q is %s credential, which has no application publish; send with an agent credential (`cotal auth mint --profile agent --allow-publish CHANNEL`)",
			errCannotSend, s.cred.Name, withArticle(p))
	}
	ctx := cmd.Context()
	// Passive: a one-shot send announces no presence, so sending with the credential of a
	// running agent leaves that agent's presence alone, and the command's own identity never
	// shows in the roster.
	opts := endpoint.Options{Link: s.raw, Creds: s.creds, Kind: wire.CardKindEndpoint, MaxReconnects: 1, Passive: true}
	if s.creds == nil {
		opts.Name = userName() // an open mesh: no credential names the sender
	}
	stop := s.waitFor("connect and read the space", readWait)
	e, err := endpoint.Connect(ctx, opts)
	stop()
	if err != nil {
		return s.connectError(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = e.Close(ctx)
	}()
	if t.name != "" {
		if t.id, err = resolveName(ctx, e, s, t.name); err != nil {
			return err
		}
	}
	if t.kind == endpoint.MetaChannel && !create {
		if err := checkChannel(ctx, e, s, t.channel); err != nil {
			return err
		}
	}
	if t.kind == endpoint.MetaAnycast {
		warnUnheldRole(ctx, cmd.ErrOrStderr(), s, t.role)
	}
	stop = s.waitFor("confirm that it stored the message", sendWait)
	r, err := publish(ctx, e, t, text)
	stop()
	if err != nil {
		return sendError(err, t, s)
	}
	return printReceipt(cmd.OutOrStdout(), f.asJSON, r, t)
}

// warnUnheldRole says, beside `cotal up`, when no active credential holds the role a svc:
// send names: the task is stored but nobody can take it, and the mesh reclaims it at its next
// pass. The send still goes ahead, since a holder may be minted in the meantime.
func warnUnheldRole(ctx context.Context, w io.Writer, s *session, role string) {
	if s.mesh == nil {
		return
	}
	recs, err := s.mesh.Credentials(ctx, s.link.Space)
	if err != nil {
		return
	}
	now := time.Now()
	var roles []string
	for _, r := range recs {
		if r.Active(now) && r.Grants.Role != "" {
			if r.Grants.Role == role {
				return
			}
			roles = append(roles, r.Grants.Role)
		}
	}
	fmt.Fprintf(w, "warning: no credential in space %s holds role %q, so no one can take this task and the mesh "+
		"reclaims it; mint a holder with `cotal auth mint --name NAME --role %s`%s\n",
		s.link.Space, role, role, suggest.DidYouMean(suggest.Prefixed("svc:", suggest.Close(role, roles))))
}

func publish(ctx context.Context, e *endpoint.Endpoint, t target, text string) (endpoint.Receipt, error) {
	ctx, cancel := context.WithTimeout(ctx, sendWait)
	defer cancel()
	parts := []wire.Part{wire.TextPart(text)}
	switch t.kind {
	case endpoint.MetaChannel:
		return e.Send(ctx, t.channel, parts)
	case endpoint.MetaDM:
		return e.SendDM(ctx, t.id, parts)
	}
	return e.SendAnycast(ctx, t.role, parts)
}

// sendError says what a refused or failed send means and what to do.
func sendError(err error, t target, s *session) error {
	if errors.Is(err, endpoint.ErrPublishRefused) && t.kind == endpoint.MetaChannel {
		return fmt.Errorf("the mesh refused to store the message: channel %q is outside the allowPublish of %q; "+
			"mint a credential that may post there (`cotal auth mint --profile agent --name NAME --allow-publish %s`), "+
			"or send without --creds beside `cotal up`", t.channel, s.cred.Name, wire.SanitizeChannel(t.channel))
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no storage confirmation within %s (%w): the message may or may not be stored; check with `cotal status`", sendWait, err)
	}
	return fmt.Errorf("send: %w", err)
}

// receipt is the --json form of a stored message.
type receipt struct {
	ID        string `json:"id"`
	Stream    string `json:"stream"`
	Seq       uint64 `json:"seq"`
	Duplicate bool   `json:"duplicate"`
	Kind      string `json:"kind"`
	Target    string `json:"target"`
	Delivered string `json:"delivered"`
}

func printReceipt(w io.Writer, asJSON bool, r endpoint.Receipt, t target) error {
	to := t.channel
	switch {
	case t.kind == endpoint.MetaDM:
		to = t.id
	case t.kind == endpoint.MetaAnycast:
		to = "svc:" + t.role
	}
	if asJSON {
		return json.NewEncoder(w).Encode(receipt{ID: r.ID, Stream: r.Stream, Seq: r.Seq, Duplicate: r.Duplicate,
			Kind: string(t.kind), Target: to, Delivered: "unknown"})
	}
	verb := "stored"
	if r.Duplicate {
		verb = "already stored (a resend of the same message id)"
	}
	_, err := fmt.Fprintf(w, "%s in %s at sequence %d (storage confirmed; delivery is not)\n", verb, r.Stream, r.Seq)
	return err
}
