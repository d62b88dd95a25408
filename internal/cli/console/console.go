package console

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

//go:embed assets
var assets embed.FS

// Errors of the console's life cycle.
var (
	// ErrNotStarted is answered (503) to requests that come before Start.
	ErrNotStarted = errors.New("console: the mesh is still starting")
	// ErrStarted is returned by a second Start: a console follows one mesh.
	ErrStarted = errors.New("console: already started")
)

// credentialName is the display name of the console's own in-process admin credential.
const credentialName = "console"

// Console is the web console's http.Handler. It refuses every request outside a session
// opened with its token (auth.go, session.go) and answers 503 until Start has connected it
// to a mesh.
type Console struct {
	token    string
	sessions *sessions
	mux      *http.ServeMux
	pages    *template.Template

	mu     sync.Mutex
	st     *state
	agents Agents // the supervisor's runtimes, ShowAgents; nil without one
}

// state is what a started console reads from: one spaceState per space of the mesh, in the
// mesh's order; the first is shown when a request names none.
type state struct {
	spaces []*spaceState
}

// spaceState is the console's view of one space of the mesh m: its passive admin Endpoint,
// the feed it follows and the sampler behind the plots.
type spaceState struct {
	m      *space.Mesh
	name   string
	e      *endpoint.Endpoint
	feed   *feed
	sample *sampler
	agents func() Agents // the console's supervised(), read per request
}

// New returns a console with a fresh random token, ready to be mounted (space.Options.Console)
// before the mesh starts.
func New() (*Console, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("console token: %w", err)
	}
	pages, err := template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, fmt.Errorf("console templates: %w", err)
	}
	c := &Console{token: base64.RawURLEncoding.EncodeToString(b), sessions: newSessions(), pages: pages}
	c.mux = c.routes()
	return c, nil
}

// URL is the console's address on the listener at base (http://host:port), with the token.
func (c *Console) URL(base string) string { return base + "/?token=" + c.token }

// Token is the secret a browser signs in with, in the query of the URL: it is traded for a
// session and never sent again.
func (c *Console) Token() string { return c.token }

// Start connects the console to m: for every space it mints an in-process admin credential,
// follows every channel, DM and anycast of the space, reads its recent history into the feed
// and starts sampling the plots. The credentials are revoked when ctx ends; the mesh closes
// the Endpoints when it closes.
func (c *Console) Start(ctx context.Context, m *space.Mesh) error {
	c.mu.Lock()
	started := c.st != nil
	c.mu.Unlock()
	if started {
		return ErrStarted
	}
	st := &state{}
	for _, sp := range m.Spaces() {
		e, err := m.Endpoint(ctx, space.AgentSpec{Space: sp, Name: credentialName,
			Profile:  provisioner.ProfileAdmin,
			Endpoint: endpoint.Options{Passive: true, Kind: wire.CardKindEndpoint}})
		if err != nil {
			return fmt.Errorf("console credential for space %s: %w", sp, err)
		}
		ss := &spaceState{m: m, name: sp, e: e, feed: newFeed(), sample: newSampler(), agents: c.supervised}
		if err := ss.feed.follow(ctx, e); err != nil {
			return fmt.Errorf("space %s: %w", sp, err)
		}
		st.spaces = append(st.spaces, ss)
	}
	for _, ss := range st.spaces {
		go ss.run(ctx)
	}
	c.mu.Lock()
	c.st = st
	c.mu.Unlock()
	return nil
}

// run samples the space's plots until the console's context or Endpoint ends, then revokes
// the console's credential so that no registry row outlives the console as active.
func (ss *spaceState) run(ctx context.Context) {
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	ss.sample.take(ss)
	for {
		select {
		case <-tick.C:
			ss.sample.take(ss)
		case <-ctx.Done():
			ss.revokeOwn()
			return
		case <-ss.e.Done():
			ss.revokeOwn()
			return
		}
	}
}

func (ss *spaceState) revokeOwn() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// In open mode there is no credential to revoke, and a closed mesh has revoked nothing
	// it needs to: both errors are expected here.
	_ = ss.m.Revoke(ctx, ss.name, ss.e.ID())
}

// space is the space a request names in its query (?space=NAME), or the mesh's first.
func (st *state) space(r *http.Request) (*spaceState, error) {
	name := r.URL.Query().Get("space")
	if name == "" {
		return st.spaces[0], nil
	}
	names := make([]string, len(st.spaces))
	for i, ss := range st.spaces {
		if ss.name == name {
			return ss, nil
		}
		names[i] = ss.name
	}
	return nil, fmt.Errorf("%w %q: this mesh serves %s; choose one in the page header",
		space.ErrNoSuchSpace, name, strings.Join(names, ", "))
}

func (c *Console) state() *state {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st
}

// ServeHTTP signs a browser in at "/" with the token, and answers a request of a live session
// (under /s/ID/, with its cookie, on its Host) from the console's routes. It refuses the rest:
// 401 when opening the printed URL again helps, 403 for a wrong token, a session used from
// another browser or address, or a cross-site state change.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	secureHeaders(w)
	if r.URL.Path == "/" {
		c.signIn(w, r)
		return
	}
	in, cancel, err := c.admit(r)
	if err != nil {
		http.Error(w, err.Error(), authStatus(err))
		return
	}
	defer cancel()
	c.mux.ServeHTTP(w, in)
}

// routes are the console's pages, fragments, event stream and actions.
func (c *Console) routes() *http.ServeMux {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", c.started(c.page))
	mux.HandleFunc("GET /view/{name}", c.started(c.view))
	mux.HandleFunc("GET /events", c.started(c.events))
	mux.HandleFunc("POST /act/mint", c.started(c.mint))
	mux.HandleFunc("POST /act/revoke", c.started(c.revoke))
	mux.HandleFunc("POST /act/channel", c.started(c.setChannel))
	return mux
}

// started answers 503 until Start has run and 404 for a space the mesh does not serve, else
// calls h with the space the request names (?space=NAME, default the first).
func (c *Console) started(h func(http.ResponseWriter, *http.Request, *spaceState)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		st := c.state()
		if st == nil {
			http.Error(w, ErrNotStarted.Error(), http.StatusServiceUnavailable)
			return
		}
		ss, err := st.space(r)
		if err != nil {
			if r.Method == http.MethodPost {
				fail(w, err) // actions answer JSON, which the page shows beside the form
			} else {
				http.Error(w, err.Error(), statusOf(err))
			}
			return
		}
		h(w, r, ss)
	}
}
