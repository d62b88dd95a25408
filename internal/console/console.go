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

// Console is the web console's http.Handler. It refuses every request without its token and
// answers 503 until Start has connected it to a mesh.
type Console struct {
	token string
	mux   *http.ServeMux
	pages *template.Template

	mu sync.Mutex
	st *state
}

// state is what a started console reads from: the mesh, its first space, the console's
// passive admin Endpoint, the feed it follows and the sampler behind the plots.
type state struct {
	m      *space.Mesh
	space  string
	e      *endpoint.Endpoint
	feed   *feed
	sample *sampler
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
	c := &Console{token: base64.RawURLEncoding.EncodeToString(b), pages: pages}
	c.mux = c.routes()
	return c, nil
}

// URL is the console's address on the listener at base (http://host:port), with the token.
func (c *Console) URL(base string) string { return base + "/?token=" + c.token }

// Token is the secret every request must carry, in the query once or in the cookie.
func (c *Console) Token() string { return c.token }

// Start connects the console to m: it mints an in-process admin credential for the first
// space, follows every channel, DM and anycast of it, reads the recent history into the feed
// and starts sampling the plots. The credential is revoked when ctx ends; the mesh closes the
// Endpoint when it closes.
func (c *Console) Start(ctx context.Context, m *space.Mesh) error {
	c.mu.Lock()
	started := c.st != nil
	c.mu.Unlock()
	if started {
		return ErrStarted
	}
	sp := m.Spaces()[0]
	e, err := m.Endpoint(ctx, space.AgentSpec{Space: sp, Name: credentialName,
		Profile:  provisioner.ProfileAdmin,
		Endpoint: endpoint.Options{Passive: true, Kind: wire.CardKindEndpoint}})
	if err != nil {
		return fmt.Errorf("console credential: %w", err)
	}
	st := &state{m: m, space: sp, e: e, feed: newFeed(), sample: newSampler()}
	if err := st.feed.follow(ctx, e); err != nil {
		return err
	}
	go st.run(ctx)
	c.mu.Lock()
	c.st = st
	c.mu.Unlock()
	return nil
}

// run samples the plots until the console's context or Endpoint ends, then revokes the
// console's credential so that no registry row outlives the console as active.
func (st *state) run(ctx context.Context) {
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	st.sample.take(st)
	for {
		select {
		case <-tick.C:
			st.sample.take(st)
		case <-ctx.Done():
			st.revokeOwn()
			return
		case <-st.e.Done():
			st.revokeOwn()
			return
		}
	}
}

func (st *state) revokeOwn() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// In open mode there is no credential to revoke, and a closed mesh has revoked nothing
	// it needs to: both errors are expected here.
	_ = st.m.Revoke(ctx, st.space, st.e.ID())
}

func (c *Console) state() *state {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st
}

// ServeHTTP refuses a request without the token (401) or with a wrong one (403), and a
// cross-site state change (403); it answers the rest from the console's routes.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	secureHeaders(w)
	if !c.authorize(w, r) {
		return
	}
	c.mux.ServeHTTP(w, r)
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

// started answers 503 until Start has run, else calls h with the console's state.
func (c *Console) started(h func(http.ResponseWriter, *http.Request, *state)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		st := c.state()
		if st == nil {
			http.Error(w, ErrNotStarted.Error(), http.StatusServiceUnavailable)
			return
		}
		h(w, r, st)
	}
}
