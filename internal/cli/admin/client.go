package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

// Client calls the admin API of the mesh running on one data directory. It keeps no
// connection between calls, so it needs no closing. It is safe for concurrent use.
type Client struct {
	path string
	http *http.Client
}

// Dial returns a client for the mesh on dir, once something listens on its admin socket;
// ErrNoMesh when nothing does. A mesh still starting already listens: its answers wait until
// it is ready. On Unix the socket must be the user's own, of mode 0600, in a directory only
// the user may write, or Dial refuses it with ErrUnsafeSocket without connecting: every call
// dials the path anew, and the directory check keeps it from being swapped in between.
func Dial(ctx context.Context, dir string) (*Client, error) {
	path := filepath.Join(dir, SocketName)
	if err := checkSocket(path); err != nil {
		return nil, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", ErrNoMesh, dir)
	}
	_ = c.Close()
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		return d.DialContext(ctx, "unix", path)
	}
	return &Client{path: path, http: &http.Client{
		Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true},
		Timeout:   requestTimeout,
		// The API never redirects; ServeMux does only for a path with an empty element.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}, nil
}

// Error is an error reply of the admin API: the mesh's sentence, its HTTP status and reason
// token. It unwraps to the mesh's sentinel error for the token (space.ErrNoSuchSpace,
// provisioner.ErrUnknownCredential, ...), so errors.Is works as it does in process.
type Error struct {
	Status  int
	Reason  string
	Message string
}

func (e *Error) Error() string { return e.Message }

// Unwrap is the sentinel error of e's reason token, or nil.
func (e *Error) Unwrap() error { return sentinel(e.Reason) }

// Ping asks whether the process behind the socket answers at all, and whether its mesh is
// ready. It is answered before the mesh is ready, so a ping that gets no answer within ctx
// means a process that is stopped (SIGSTOP, a debugger) or stuck, not one starting up.
func (c *Client) Ping(ctx context.Context) (Ping, error) {
	var p Ping
	return p, c.do(ctx, http.MethodGet, pingPath, nil, &p, http.StatusOK)
}

// Status is the mesh's operator view (GET /v1/status).
func (c *Client) Status(ctx context.Context) (*space.Status, error) {
	var st space.Status
	return &st, c.do(ctx, http.MethodGet, "/v1/status", nil, &st, http.StatusOK)
}

// Links is the join link of every space (GET /v1/links).
func (c *Client) Links(ctx context.Context) (map[string]string, error) {
	var links map[string]string
	return links, c.do(ctx, http.MethodGet, "/v1/links", nil, &links, http.StatusOK)
}

// Link is the join link of one space (GET /v1/spaces/{space}/link).
func (c *Client) Link(ctx context.Context, spaceName string) (string, error) {
	var l Link
	err := c.do(ctx, http.MethodGet, spacePath(spaceName, "link"), nil, &l, http.StatusOK)
	return l.Link, err
}

// Mint mints spec in its space (POST /v1/spaces/{space}/credentials).
func (c *Client) Mint(ctx context.Context, spec MintSpec) (*MintedCredential, error) {
	var cred MintedCredential
	err := c.do(ctx, http.MethodPost, spacePath(spec.Space, "credentials"), spec, &cred, http.StatusCreated)
	if err != nil {
		return nil, err
	}
	return &cred, nil
}

// Credentials lists the credentials of a space (GET /v1/spaces/{space}/credentials).
func (c *Client) Credentials(ctx context.Context, spaceName string) ([]space.CredentialInfo, error) {
	var recs []space.CredentialInfo
	return recs, c.do(ctx, http.MethodGet, spacePath(spaceName, "credentials"), nil, &recs, http.StatusOK)
}

// Revoke revokes credential id of a space (DELETE /v1/spaces/{space}/credentials/{id}).
func (c *Client) Revoke(ctx context.Context, spaceName, id string) error {
	return c.do(ctx, http.MethodDelete, spacePath(spaceName, "credentials", id), nil, nil, http.StatusNoContent)
}

// Pending is what waits for one instance, named by id or name (GET .../pending/{who}).
func (c *Client) Pending(ctx context.Context, spaceName, who string) (*space.MemberBacklog, error) {
	var b space.MemberBacklog
	err := c.do(ctx, http.MethodGet, spacePath(spaceName, "pending", who), nil, &b, http.StatusOK)
	if err != nil {
		return nil, err
	}
	return &b, nil
}

// SetChannel changes u.Channel's registry entry (PATCH .../channels/{channel}).
func (c *Client) SetChannel(ctx context.Context, spaceName string, u space.ChannelUpdate) (*wire.ChannelConfig, error) {
	var cfg wire.ChannelConfig
	err := c.do(ctx, http.MethodPatch, spacePath(spaceName, "channels", u.Channel), u, &cfg, http.StatusOK)
	if err != nil {
		return nil, err
	}
	return &cfg, nil
}

// RemoveChannel deletes a channel's messages and registry entry (DELETE .../channels/{channel}).
func (c *Client) RemoveChannel(ctx context.Context, spaceName, channel string) (*space.ChannelRemoval, error) {
	var rm space.ChannelRemoval
	err := c.do(ctx, http.MethodDelete, spacePath(spaceName, "channels", channel), nil, &rm, http.StatusOK)
	if err != nil {
		return nil, err
	}
	return &rm, nil
}

// SetChannelDefaults changes the space defaults (PATCH /v1/spaces/{space}/defaults).
func (c *Client) SetChannelDefaults(ctx context.Context, spaceName string, u space.ChannelUpdate) (*wire.ChannelDefaults, error) {
	var d wire.ChannelDefaults
	err := c.do(ctx, http.MethodPatch, spacePath(spaceName, "defaults"), u, &d, http.StatusOK)
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// spacePath is /v1/spaces/{space}/... with every element escaped.
func spacePath(spaceName string, elems ...string) string {
	p := "/v1/spaces/" + url.PathEscape(spaceName)
	for _, e := range elems {
		p += "/" + url.PathEscape(e)
	}
	return p
}

// do sends one request and decodes a reply of status want into out; any other status is an
// *Error.
func (c *Client) do(ctx context.Context, method, path string, in, out any, want int) error {
	if strings.Contains(path, "//") || strings.HasSuffix(path, "/") {
		return fmt.Errorf("%w: %s %s: a space, id or channel is empty", ErrBadRequest, method, path)
	}
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://cotal"+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return fmt.Errorf("%w (%s)", ErrNoMesh, filepath.Dir(c.path))
		}
		return fmt.Errorf("admin socket %s: %w", c.path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		return replyError(resp)
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("admin socket %s: %s %s: decode reply: %w", c.path, method, path, err)
	}
	return nil
}

func replyError(resp *http.Response) error {
	var b errorBody
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err := json.Unmarshal(data, &b); err != nil || b.Error == "" {
		b.Error = fmt.Sprintf("admin socket answered %s: %s", resp.Status, bytes.TrimSpace(data))
	}
	return &Error{Status: resp.StatusCode, Reason: b.Reason, Message: b.Error}
}
