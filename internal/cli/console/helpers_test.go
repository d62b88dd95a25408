package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/internal/cli/console"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// fixture is a real mesh with the console on its HTTP listener and two agents on #general of
// its first space.
type fixture struct {
	m          *space.Mesh
	con        *console.Console
	base       string
	alice, bob *endpoint.Endpoint
	signedIn   *signedIn
}

var general = []string{"general"}

// newFixture starts a mesh of the given spaces, default one space "main".
func newFixture(t testing.TB, spaces ...string) *fixture {
	t.Helper()
	con, err := console.New()
	if err != nil {
		t.Fatal(err)
	}
	m := spacetest.New(t, func(o *space.Options) { o.HTTP, o.Console, o.Spaces = "127.0.0.1:0", con, spaces })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := con.Start(ctx, m); err != nil {
		t.Fatalf("start console: %v", err)
	}
	f := &fixture{m: m, con: con, base: m.HTTPURL()}
	f.alice = f.agent(t, "alice", "planner")
	f.bob = f.agent(t, "bob", "")
	return f
}

// agent connects an agent on #general of the mesh's first space.
func (f *fixture) agent(t testing.TB, name, role string) *endpoint.Endpoint {
	t.Helper()
	return f.agentIn(t, "", name, role)
}

// agentIn connects an agent on #general of space sp ("" is the first) with a minted
// credential, as an agent of `cotal up` connects with its .creds file: the console may revoke
// it, unlike the mesh's own in-process credentials.
func (f *fixture) agentIn(t testing.TB, sp, name, role string) *endpoint.Endpoint {
	t.Helper()
	if sp == "" {
		sp = f.m.Spaces()[0]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cred, err := admin.Mint(ctx, f.m, admin.MintSpec{Space: sp, Name: name, Profile: "agent", Role: role,
		Subscribe: general, AllowPublish: general})
	if err != nil {
		t.Fatalf("mint %s: %v", name, err)
	}
	e, err := endpoint.Connect(ctx, endpoint.Options{InProcess: f.m.InProcess(), Space: sp, Name: name,
		Creds: cred.Creds, Channels: general, Role: role})
	if err != nil {
		t.Fatalf("agent %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.Close(ctx) // an agent the test revoked has no connection left to close cleanly
	})
	return e
}

func (f *fixture) send(t testing.TB, e *endpoint.Endpoint, text string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.Send(ctx, "general", []wire.Part{wire.TextPart(text)}); err != nil {
		t.Fatalf("send: %v", err)
	}
}

// request is one request to the console: auth says what it carries ("session": the
// session's path and cookie, as the console's page sends; "cookie only" or "path only": one
// half; "query": the token, to sign in; "wrong": a wrong token; "none"); a POST carries form
// and this origin unless origin is set; host, when set, is the Host header.
type request struct {
	method, path, auth, origin, host string
	form                             url.Values
}

// client does not follow redirects, so a test sees the sign-in's.
var client = &http.Client{Timeout: 15 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// do sends req and returns the status and body; redirects are not followed.
func (f *fixture) do(t testing.TB, req request) (int, string, http.Header) {
	t.Helper()
	u := f.base + req.path
	if req.auth == "session" || req.auth == "path only" {
		u = f.base + f.session(t).root + strings.TrimPrefix(req.path, "/")
	}
	var body io.Reader
	if req.form != nil {
		body = strings.NewReader(req.form.Encode())
	}
	switch req.auth {
	case "query":
		u += sep(u) + "token=" + f.con.Token()
	case "wrong":
		u += sep(u) + "token=not-the-token"
	}
	r, err := http.NewRequest(req.method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if req.auth == "session" || req.auth == "cookie only" {
		r.AddCookie(f.session(t).cookie)
	}
	if req.form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header.Set("Origin", f.base)
		if req.origin != "" {
			r.Header.Set("Origin", req.origin)
		}
	}
	if req.host != "" {
		r.Host = req.host
	}
	res, err := client.Do(r)
	if err != nil {
		t.Fatalf("%s %s: %v", req.method, req.path, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(data), res.Header
}

// signedIn is a session of the console: the root of its URLs (/s/ID/) and its cookie.
type signedIn struct {
	root   string
	cookie *http.Cookie
}

// session signs the fixture in once, as a browser does with the URL `cotal up` prints.
func (f *fixture) session(t testing.TB) signedIn {
	t.Helper()
	if f.signedIn == nil {
		s := signIn(t, f.con.URL(f.base))
		f.signedIn = &s
	}
	return *f.signedIn
}

// signIn opens the console URL u and returns the session it redirects to.
func signIn(t testing.TB, u string) signedIn {
	t.Helper()
	res, err := client.Get(u)
	if err != nil {
		t.Fatalf("sign in: %v", err)
	}
	res.Body.Close()
	loc, cookies := res.Header.Get("Location"), res.Cookies()
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/s/") || len(cookies) != 1 {
		t.Fatalf("sign in: status %d, location %q, cookies %v: want a 303 to /s/ID/ with one cookie", res.StatusCode, loc, cookies)
	}
	root, _, _ := strings.Cut(loc, "?")
	return signedIn{root: root, cookie: &http.Cookie{Name: cookies[0].Name, Value: cookies[0].Value}}
}

func sep(u string) string {
	if strings.Contains(u, "?") {
		return "&"
	}
	return "?"
}

func partsOf(text string) []wire.Part { return []wire.Part{wire.TextPart(text)} }

// channels makes n channels team.00000… of the first space, one message each, from one agent
// whose grant covers team.>, as an agent of a real mesh can.
func (f *fixture) channels(t testing.TB, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	team := []string{"team.>"}
	cred, err := admin.Mint(ctx, f.m, admin.MintSpec{Space: f.m.Spaces()[0], Name: "maker", Profile: "agent",
		Subscribe: general, AllowPublish: team})
	if err != nil {
		t.Fatalf("mint maker: %v", err)
	}
	e, err := endpoint.Connect(ctx, endpoint.Options{InProcess: f.m.InProcess(), Space: f.m.Spaces()[0], Name: "maker",
		Creds: cred.Creds, Channels: general})
	if err != nil {
		t.Fatalf("maker: %v", err)
	}
	defer func() { _ = e.Close(ctx) }()
	for i := range n {
		if _, err := e.Send(ctx, fmt.Sprintf("team.%05d", i), partsOf("made")); err != nil {
			t.Fatalf("send to channel %d: %v", i, err)
		}
	}
}

// authed is r with what a page of the console sends: its session's path and cookie.
func (f *fixture) authed(t testing.TB, r *http.Request) *http.Request {
	t.Helper()
	s := f.session(t)
	r.URL.Path = s.root + strings.TrimPrefix(r.URL.Path, "/")
	r.AddCookie(s.cookie)
	return r
}
