package admin

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

// serve starts a mesh on a fresh data directory and serves its admin socket, both closed by
// the test's cleanup.
func serve(t *testing.T) (*space.Mesh, *Client, string) {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := Listen(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := space.Start(ctx, space.Options{Dir: dir, Memory: true, Listen: "127.0.0.1:0"})
	if err != nil {
		_ = srv.Close(ctx)
		t.Fatal(err)
	}
	srv.Serve(m, nil)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := errors.Join(srv.Close(ctx), m.Close(ctx)); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	c, err := Dial(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	return m, c, dir
}

func TestClientCallsEveryRoute(t *testing.T) {
	m, c, _ := serve(t)
	ctx := context.Background()
	cred, err := c.Mint(ctx, MintSpec{Space: "main", Name: "alice", Profile: "agent",
		AllowSubscribe: []string{"general"}, AllowPublish: []string{"general"}})
	if err != nil || !cred.Provisioned || len(cred.Creds) == 0 {
		t.Fatalf("Mint = %+v, %v; want a provisioned credential with its creds", cred, err)
	}
	recs, err := c.Credentials(ctx, "main")
	if err != nil || len(recs) != 1 || recs[0].ID != cred.ID {
		t.Fatalf("Credentials = %+v, %v; want alice only", recs, err)
	}
	link, err := c.Link(ctx, "main")
	want, _ := m.Link("main")
	if err != nil || link != want {
		t.Fatalf("Link = %q, %v; want %q", link, err, want)
	}
	if links, err := c.Links(ctx); err != nil || links["main"] != want {
		t.Fatalf("Links = %v, %v", links, err)
	}
	if st, err := c.Status(ctx); err != nil || len(st.Spaces) != 1 || len(st.Spaces[0].Members) != 1 {
		t.Fatalf("Status = %+v, %v; want one space with alice", st, err)
	}
	if b, err := c.Pending(ctx, "main", "alice"); err != nil || b.ID != cred.ID || b.DM.Missing {
		t.Fatalf("Pending = %+v, %v", b, err)
	}
	live := wire.DeliveryLive
	if cfg, err := c.SetChannel(ctx, "main", space.ChannelUpdate{Channel: "alerts", DeliveryClass: &live, Create: true}); err != nil || cfg.DeliveryClass != live {
		t.Fatalf("SetChannel = %+v, %v", cfg, err)
	}
	window := "7d"
	if d, err := c.SetChannelDefaults(ctx, "main", space.ChannelUpdate{ReplayWindow: &window}); err != nil || d.ReplayWindow != window {
		t.Fatalf("SetChannelDefaults = %+v, %v", d, err)
	}
	if err := c.Revoke(ctx, "main", cred.ID); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	if recs, _ := c.Credentials(ctx, "main"); len(recs) != 1 || !recs[0].Revoked {
		t.Fatalf("after Revoke the registry holds %+v, want alice revoked", recs)
	}
}

func TestErrorsCarryTheirStatusAndSentinel(t *testing.T) {
	m, c, _ := serve(t)
	ctx := context.Background()
	// Two active credentials share a name only when one is in process (the mesh refuses a
	// second remote one), so the second twin is minted in process.
	if _, err := c.Mint(ctx, MintSpec{Space: "main", Name: "twin", Profile: "agent"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Mint(ctx, provisioner.MintRequest{Space: "main", Name: "twin",
		Profile: provisioner.ProfileAgent, InProcessOnly: true}); err != nil {
		t.Fatal(err)
	}
	live := wire.DeliveryLive
	tests := []struct {
		name   string
		call   func() error
		status int
		want   error
	}{
		{"an unknown profile is a bad request", func() error {
			_, err := c.Mint(ctx, MintSpec{Space: "main", Name: "x", Profile: "root"})
			return err
		}, http.StatusBadRequest, provisioner.ErrUnknownProfile},
		{"an identity that is not a seed is a bad request", func() error {
			_, err := c.Mint(ctx, MintSpec{Space: "main", Name: "x", Profile: "agent", IdentitySeed: "nope"})
			return err
		}, http.StatusBadRequest, provisioner.ErrInvalidRequest},
		{"an unknown space is not found", func() error {
			_, err := c.Credentials(ctx, "elsewhere")
			return err
		}, http.StatusNotFound, space.ErrNoSuchSpace},
		{"revoking an unknown id is not found", func() error {
			return c.Revoke(ctx, "main", "UDTK2MEYYY33WROIB3F52XDRY3UOQ2FVWDPANSEP4ZM3VXTTO4XW6LZO")
		}, http.StatusNotFound, provisioner.ErrUnknownCredential},
		{"a channel with no message is not found", func() error {
			_, err := c.SetChannel(ctx, "main", space.ChannelUpdate{Channel: "genral", DeliveryClass: &live})
			return err
		}, http.StatusNotFound, space.ErrUnknownChannel},
		{"an empty space is refused before it is sent", func() error {
			_, err := c.Credentials(ctx, "")
			return err
		}, 0, ErrBadRequest},
		{"a name two credentials carry is a conflict", func() error {
			_, err := c.Pending(ctx, "main", "twin")
			return err
		}, http.StatusConflict, space.ErrAmbiguousName},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var ae *Error
			if tc.status == 0 {
				if errors.As(err, &ae) || !errors.Is(err, tc.want) {
					t.Fatalf("error = %v, want %v raised by the client", err, tc.want)
				}
				return
			}
			if !errors.As(err, &ae) || ae.Status != tc.status || !errors.Is(err, tc.want) {
				t.Fatalf("error = %v (%+v), want status %d wrapping %v", err, ae, tc.status, tc.want)
			}
		})
	}
}

func TestPlainHTTPAnswersWithJSON(t *testing.T) {
	_, _, dir := serve(t)
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", filepath.Join(dir, SocketName))
		}}}
	tests := []struct {
		name, method, path, body string
		status                   int
		reason                   string
	}{
		{"status is a GET", "GET", "/v1/status", "", http.StatusOK, ""},
		{"a body that is not JSON is a bad request", "POST", "/v1/spaces/main/credentials", "{", http.StatusBadRequest, "bad-request"},
		{"an unknown body field is a bad request", "POST", "/v1/spaces/main/credentials", `{"nmae":"x"}`, http.StatusBadRequest, "bad-request"},
		{"a body naming another space is a bad request", "POST", "/v1/spaces/main/credentials", `{"space":"other","name":"x","profile":"agent"}`, http.StatusBadRequest, "bad-request"},
		{"an unknown route is not found", "GET", "/v1/nothing", "", http.StatusNotFound, "not-found"},
		{"an unknown space is not found", "GET", "/v1/spaces/nope/link", "", http.StatusNotFound, "no-such-space"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, "http://cotal"+tc.path, strings.NewReader(tc.body))
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var b errorBody
			if err := json.NewDecoder(resp.Body).Decode(&b); err != nil {
				t.Fatalf("reply is not JSON: %v", err)
			}
			if resp.StatusCode != tc.status || b.Reason != tc.reason || (tc.reason != "" && b.Error == "") {
				t.Fatalf("%s %s = %d %+v, want %d with reason %q and a sentence", tc.method, tc.path, resp.StatusCode, b, tc.status, tc.reason)
			}
		})
	}
}

// pascalKey is an object key that starts with a capital, as Go writes an untagged field.
var pascalKey = regexp.MustCompile(`"[A-Z]\w*":`)

func TestStatusKeysAreCamelCaseLikeTheRestOfTheJSON(t *testing.T) {
	_, _, dir := serve(t)
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", filepath.Join(dir, SocketName))
		}}}
	resp, err := hc.Get("http://cotal/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/status = %d, %v", resp.StatusCode, err)
	}
	if k := pascalKey.FindString(string(body)); k != "" {
		t.Fatalf("/v1/status has the key %s; every key is camelCase:\n%s", k, body)
	}
	for _, k := range []string{`"backstop":{"fannedOutDurable":`, `"readerDroppedFull":`, `"readerLag":`} {
		if !strings.Contains(string(body), k) {
			t.Errorf("/v1/status lacks %s:\n%s", k, body)
		}
	}
}

func TestSocketIsPrivateAndSingle(t *testing.T) {
	t.Run("the socket is 0600 and a second server is refused", func(t *testing.T) {
		_, _, dir := serve(t)
		fi, err := os.Stat(filepath.Join(dir, SocketName))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("socket mode = %v (%v), want 0600", fi.Mode().Perm(), err)
		}
		if _, err := Listen(dir); !errors.Is(err, ErrMeshRunning) {
			t.Fatalf("second Listen = %v, want ErrMeshRunning", err)
		}
	})
	t.Run("a stale socket is replaced", func(t *testing.T) {
		dir := t.TempDir()
		ln, err := net.Listen("unix", filepath.Join(dir, SocketName))
		if err != nil {
			t.Fatal(err)
		}
		ln.(*net.UnixListener).SetUnlinkOnClose(false)
		_ = ln.Close()
		srv, err := Listen(dir)
		if err != nil {
			t.Fatalf("Listen over a stale socket: %v", err)
		}
		if err := srv.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, SocketName)); !os.IsNotExist(err) {
			t.Fatalf("socket left after Close: %v", err)
		}
	})
	t.Run("no socket is no mesh", func(t *testing.T) {
		if _, err := Dial(context.Background(), t.TempDir()); !errors.Is(err, ErrNoMesh) {
			t.Fatalf("Dial on an empty directory = %v, want ErrNoMesh", err)
		}
	})
}

// TestPingAnswersBeforeTheMeshIsReady: a bound socket answers a ping at once, before Serve,
// while the other routes wait; a Close before Serve refuses what waits.
func TestPingAnswersBeforeTheMeshIsReady(t *testing.T) {
	dir := t.TempDir()
	srv, err := Listen(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := c.Ping(ctx); err != nil || p.Ready {
		t.Fatalf("Ping before Serve = %+v, %v; want an answer that is not ready", p, err)
	}
	waiting := make(chan error, 1)
	go func() {
		_, err := c.Status(ctx)
		waiting <- err
	}()
	select {
	case err := <-waiting:
		t.Fatalf("Status answered before Serve: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := srv.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-waiting; err == nil {
		t.Fatal("a Status waiting for Serve succeeded after Close")
	}
}

func TestAgentRoutesWithoutASupervisor(t *testing.T) {
	_, c, _ := serve(t)
	ctx := context.Background()
	if list, err := c.Agents(ctx); err != nil || len(list) != 0 {
		t.Fatalf("Agents = %+v, %v; want none", list, err)
	}
	if _, err := c.StartAgent(ctx, AgentStart{Space: "main", Name: "a", File: "/a.md", Command: []string{"true"}}); !errors.Is(err, ErrNoSupervisor) {
		t.Fatalf("StartAgent = %v, want ErrNoSupervisor", err)
	}
	if err := c.StopAgent(ctx, "main", "a"); !errors.Is(err, ErrNoSupervisor) {
		t.Fatalf("StopAgent = %v, want ErrNoSupervisor", err)
	}
}
