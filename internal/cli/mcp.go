package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/cli/mcpserver"
	"github.com/cotal-go/cotal/wire"
)

// errMCPSetup: `cotal mcp` lacks the link or credential it joins the mesh with.
var errMCPSetup = errors.New("cotal mcp needs a join link and an agent credential")

func newMCPCmd() *cobra.Command {
	var link, creds string
	var inboxSize int
	cmd := &cobra.Command{
		Use:   "mcp --link LINK --creds FILE",
		Short: "Serve the mesh to an MCP agent runtime over stdio, as one agent",
		Long: `mcp joins the mesh as the agent of --creds and serves the Model Context Protocol on
standard input and output, so an agent runtime (Claude Code, Cursor, OpenCode, ...) takes part
as a peer through the cotal_* tools: cotal_send, cotal_dm, cotal_anycast, cotal_inbox,
cotal_roster, cotal_status, cotal_channels, cotal_channel_info, cotal_join, cotal_leave and
cotal_history. The agent joins its credential's --subscribe channels (for a credential minted
without them, the concrete channels it may read), and cotal_send posts on the first of them
by default; messages for it collect in an inbox (also the resource cotal://inbox, with update notifications). While the
mesh is unreachable it keeps reconnecting, and its tools say so and to try again.

Standard output carries MCP messages only; logs go to standard error.

--link (or COTAL_LINK) is the join link "cotal up" prints; --creds (or COTAL_CREDS) is an agent
.creds file from "cotal auth mint --profile agent".`,
		Example: `  cotal auth mint --profile agent --name alice --subscribe general --allow-publish general --out alice.creds
  cotal mcp --link cotal://127.0.0.1:4222/main --creds alice.creds`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			link, creds, err := linkAndCreds(cmd, link, creds)
			if err != nil {
				return err
			}
			return runMCP(cmd, link, creds, inboxSize)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&link, "link", "", "join link of the mesh, e.g. cotal://127.0.0.1:4222/main (env "+envLink+")")
	fs.StringVar(&creds, "creds", "", "agent .creds file to join as (env "+envCreds+")")
	fs.IntVar(&inboxSize, "inbox-size", mcpserver.DefaultInboxSize, "messages the inbox holds before it drops live channel copies")
	_ = cmd.MarkFlagFilename("creds", "creds")
	addContextFlag(cmd)
	return cmd
}

// orEnv is v, else the environment variable name.
func orEnv(v, name string) string {
	if v != "" {
		return v
	}
	return os.Getenv(name)
}

func runMCP(cmd *cobra.Command, link, credsPath string, inboxSize int) error {
	switch {
	case credsPath == "":
		return fmt.Errorf("%w: pass --creds (or set %s) with an agent credential; mint one with "+
			"`cotal auth mint --profile agent --name NAME --subscribe CHANNEL --allow-publish CHANNEL --out NAME.creds`", errMCPSetup, envCreds)
	case link == "":
		return fmt.Errorf("%w: pass --link (or set %s) with the join link `cotal up` prints (`cotal link` shows it)", errMCPSetup, envLink)
	}
	l, err := wire.ParseLink(link)
	if err != nil {
		return fmt.Errorf("--link: %w; pass the join link `cotal up` prints", err)
	}
	data, cred, err := readCreds(credsPath)
	if err != nil {
		return err
	}
	if cred.Profile != "" && cred.Profile != wire.ProfileAgent {
		return fmt.Errorf("%w: %s is %s credential, which cannot take part; mint one with `cotal auth mint --profile agent`",
			errMCPSetup, credsPath, withArticle(cred.Profile))
	}
	format, _ := cmd.Flags().GetString("log-format")
	level, _ := cmd.Flags().GetString("log-level")
	log := newLogger(format, level, cmd.ErrOrStderr())
	channels := bootChannels(cred)
	inbox := mcpserver.NewInbox(inboxSize)
	s := &session{link: l, raw: link, creds: data, cred: cred}
	ctx := cmd.Context()
	e, err := endpoint.Connect(ctx, mcpEndpointOptions(link, data, channels, inbox, log))
	if err != nil {
		return s.connectError(err)
	}
	defer func() {
		ctx, cancel := newTimeoutContext(5 * time.Second)
		defer cancel()
		_ = e.Close(ctx)
	}()
	opts := mcpserver.Options{Version: cotalVersion(), Logger: log, Manager: mcpserver.AccessOf(cred)}
	if len(channels) > 0 {
		opts.DefaultChannel = channels[0]
	}
	srv := mcpserver.NewServer(e, inbox, opts)
	defer srv.Close()
	log.Info("serving MCP on stdio", "name", e.Name(), "id", e.ID(), "channels", channels)
	return serveMCP(ctx, e, srv, mcpserver.NewLineTransport(cmd.InOrStdin(), cmd.OutOrStdout()))
}

// mcpEndpointOptions are the options cotal mcp connects with: the agent's channels joined at
// connect, the inbox as Handler, and reconnects without a bound. An MCP server lives as long
// as the runtime's session, which cannot start it again, so it outlives a mesh outage of any
// length; its tools answer meanwhile that the mesh is unreachable and to try again.
func mcpEndpointOptions(link string, creds []byte, channels []string, inbox *mcpserver.Inbox, log *slog.Logger) endpoint.Options {
	return endpoint.Options{Link: link, Creds: creds, Channels: channels, Handler: inbox.Handle, Logger: log,
		ReconnectForever: true}
}

// serveMCP serves srv on stdio until the client closes its end, ctx ends, or the Endpoint
// stops for good (reconnects have no bound, but a broker that drops the CONNECT line before
// authentication is not retried forever); in the last case it fails, so that the runtime sees
// the server end rather than tools failing forever.
func serveMCP(ctx context.Context, e *endpoint.Endpoint, srv *mcpserver.Server, t mcp.Transport) error {
	serveCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		select {
		case <-e.Done():
			stop()
		case <-serveCtx.Done():
		}
	}()
	err := runBounded(serveCtx, srv, t)
	select {
	case <-e.Done():
		if ctx.Err() == nil {
			return fmt.Errorf("%w: the connection ended for good (%v); check that the mesh runs, then start cotal mcp again",
				errUnreachable, e.Err())
		}
	default:
	}
	if err != nil && serveCtx.Err() == nil && !errors.Is(err, mcp.ErrConnectionClosed) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("serve MCP: %w", err)
	}
	return nil
}

// mcpStopGrace bounds how long cotal mcp waits, once told to stop, for the tool calls in
// flight: a cotal_inbox wait or a call to a mesh that is down would otherwise hold the exit
// for as long as it runs (the SDK's Run waits for every handler).
const mcpStopGrace = time.Second

// runBounded runs srv on t until it returns, or until mcpStopGrace after ctx ends. A handler
// still running then ends with the process, which exits next; its answer could reach no one.
func runBounded(ctx context.Context, srv *mcpserver.Server, t mcp.Transport) error {
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, t) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	timer := time.NewTimer(mcpStopGrace)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		return ctx.Err()
	}
}

// bootChannels are the channels cotal mcp joins at connect, the first being cotal_send's
// default: the credential's --subscribe channels, in order, which Connect joins by default
// (endpoint.Options.Channels). A credential without subscribe tags (minted before the mint
// wrote them, or with no --subscribe) gives no way to tell its active read set from its read
// ACL, so then the concrete channels of the read ACL are joined too.
func bootChannels(cred endpoint.Credential) []string {
	if len(cred.Subscribe) > 0 {
		return cred.Subscribe
	}
	return joinableChannels(cred.ReadACL)
}

// joinableChannels are the read ACL entries an agent can join: channels, not patterns.
func joinableChannels(acl []string) []string {
	var out []string
	for _, ch := range acl {
		if wire.ValidatePublishChannel(ch) == nil {
			out = append(out, ch)
		}
	}
	return out
}
