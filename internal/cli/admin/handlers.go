package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/cotal-go/cotal/space"
)

// handler answers one route: a status and a body to encode, or an error to classify.
type handler func(ctx context.Context, r *http.Request) (int, any, error)

// routes is the admin API of m (see the package doc).
func routes(m *space.Mesh, sup Supervisor, log *slog.Logger) http.Handler {
	h := &handlers{m: m, sup: sup, log: log}
	mux := http.NewServeMux()
	for pattern, fn := range map[string]handler{
		"GET /v1/status":                                h.status,
		"GET /v1/links":                                 h.links,
		"GET /v1/spaces/{space}/link":                   h.link,
		"POST /v1/spaces/{space}/credentials":           h.mint,
		"GET /v1/spaces/{space}/credentials":            h.credentials,
		"DELETE /v1/spaces/{space}/credentials/{id}":    h.revoke,
		"GET /v1/spaces/{space}/pending/{who}":          h.pending,
		"PATCH /v1/spaces/{space}/channels/{channel}":   h.setChannel,
		"DELETE /v1/spaces/{space}/channels/{channel}":  h.removeChannel,
		"PATCH /v1/spaces/{space}/defaults":             h.setDefaults,
		"POST /v1/agents":                               h.startAgent,
		"GET /v1/agents":                                h.agents,
		"DELETE /v1/spaces/{space}/agents/{name}":       h.stopAgent,
		"GET /v1/spaces/{space}/agents/{name}/logs":     h.agentLogs,
		"PUT /v1/spaces/{space}/agents/{name}/watch":    h.watchAgent,
		"DELETE /v1/spaces/{space}/agents/{name}/watch": h.unwatchAgent,
		"/": notFound,
	} {
		mux.Handle(pattern, fn)
	}
	return mux
}

// ServeHTTP runs h under requestTimeout and writes its reply as JSON.
func (h handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	status, body, err := h(ctx, r)
	if err != nil {
		var token string
		status, token = classify(err)
		body = errorBody{Error: err.Error(), Reason: token}
	}
	if body == nil {
		w.WriteHeader(status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func notFound(_ context.Context, r *http.Request) (int, any, error) {
	return 0, nil, fmt.Errorf("%w: %s %s", ErrNotFound, r.Method, r.URL.Path)
}

type handlers struct {
	m   *space.Mesh
	sup Supervisor // nil: the agent routes say the mesh supervises none
	log *slog.Logger
}

func (h *handlers) status(ctx context.Context, _ *http.Request) (int, any, error) {
	st, err := h.m.Status(ctx)
	return http.StatusOK, st, err
}

func (h *handlers) links(context.Context, *http.Request) (int, any, error) {
	links, err := h.m.Links()
	return http.StatusOK, links, err
}

func (h *handlers) link(_ context.Context, r *http.Request) (int, any, error) {
	name := r.PathValue("space")
	link, err := h.m.Link(name)
	return http.StatusOK, Link{Space: name, Link: link}, err
}

func (h *handlers) mint(ctx context.Context, r *http.Request) (int, any, error) {
	var spec MintSpec
	if err := decode(r, &spec); err != nil {
		return 0, nil, err
	}
	if err := samePath("space", r.PathValue("space"), &spec.Space); err != nil {
		return 0, nil, err
	}
	cred, err := Mint(ctx, h.m, spec)
	if err == nil {
		h.log.Info("minted a credential", "space", cred.Space, "name", cred.Name, "profile", cred.Profile, "id", cred.ID)
	}
	return http.StatusCreated, cred, err
}

func (h *handlers) credentials(_ context.Context, r *http.Request) (int, any, error) {
	recs, err := h.m.Credentials(r.PathValue("space"))
	if recs == nil {
		recs = []space.CredentialInfo{}
	}
	return http.StatusOK, recs, err
}

func (h *handlers) revoke(ctx context.Context, r *http.Request) (int, any, error) {
	spaceName, id := r.PathValue("space"), r.PathValue("id")
	name := h.credentialName(spaceName, id) // before the revocation, which may forget the row
	err := h.m.Revoke(ctx, spaceName, id)
	if err == nil {
		h.log.Info("revoked a credential", "space", spaceName, "name", name, "id", id)
	}
	return http.StatusNoContent, nil, err
}

// credentialName is the name id was minted with, for the log; empty when unknown.
func (h *handlers) credentialName(spaceName, id string) string {
	recs, _ := h.m.Credentials(spaceName)
	for _, r := range recs {
		if r.ID == id {
			return r.Name
		}
	}
	return ""
}

func (h *handlers) pending(ctx context.Context, r *http.Request) (int, any, error) {
	b, err := h.m.Pending(ctx, r.PathValue("space"), r.PathValue("who"))
	return http.StatusOK, b, err
}

func (h *handlers) setChannel(ctx context.Context, r *http.Request) (int, any, error) {
	var u space.ChannelUpdate
	if err := decode(r, &u); err != nil {
		return 0, nil, err
	}
	if err := samePath("channel", r.PathValue("channel"), &u.Channel); err != nil {
		return 0, nil, err
	}
	c, err := h.m.SetChannel(ctx, r.PathValue("space"), u)
	return http.StatusOK, c, err
}

func (h *handlers) removeChannel(ctx context.Context, r *http.Request) (int, any, error) {
	rm, err := h.m.RemoveChannel(ctx, r.PathValue("space"), r.PathValue("channel"))
	if err == nil {
		h.log.Info("removed a channel", "space", r.PathValue("space"), "channel", rm.Channel, "messages", rm.Messages)
	}
	return http.StatusOK, rm, err
}

func (h *handlers) setDefaults(ctx context.Context, r *http.Request) (int, any, error) {
	var u space.ChannelUpdate
	if err := decode(r, &u); err != nil {
		return 0, nil, err
	}
	d, err := h.m.SetChannelDefaults(ctx, r.PathValue("space"), u)
	return http.StatusOK, d, err
}

// decode reads a JSON body strictly: an unknown field is a client bug worth a 400.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: body: %w", ErrBadRequest, err)
	}
	return nil
}

// samePath fills an empty body field from the path, and refuses one that names another value.
func samePath(name, fromPath string, field *string) error {
	if *field != "" && *field != fromPath {
		return fmt.Errorf("%w: the body's %s %q differs from the path's %q", ErrBadRequest, name, *field, fromPath)
	}
	*field = fromPath
	return nil
}
