package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/cotal-go/cotal/config"
	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

// Errors of the operator actions.
var (
	// ErrBadForm means an action's form has a value no action can take (a duration that is no
	// duration, a replay that is not on or off).
	ErrBadForm = errors.New("invalid form value")
	// ErrOwnCredential means a revoke named a credential the running mesh uses itself.
	ErrOwnCredential = errors.New("the mesh uses this credential itself")
)

// actionTimeout bounds one operator action.
const actionTimeout = 10 * time.Second

// maxForm bounds an action's body.
const maxForm = 64 << 10

// mint issues a credential as `cotal auth mint` does and answers with the .creds file as a
// download: the console keeps no copy, so it can be fetched this once only.
func (c *Console) mint(w http.ResponseWriter, r *http.Request, ss *spaceState) {
	if !parseForm(w, r) {
		return
	}
	f := r.PostForm
	spec := admin.MintSpec{Space: ss.name, Name: strings.TrimSpace(f.Get("name")),
		Profile: f.Get("profile"), Role: strings.TrimSpace(f.Get("role")),
		Subscribe: list(f.Get("subscribe")), AllowSubscribe: list(f.Get("allowSubscribe")),
		AllowPublish: list(f.Get("allowPublish"))}
	if in := strings.TrimSpace(f.Get("expiresIn")); in != "" {
		d, err := config.ParseDuration(in)
		if err == nil && d <= 0 {
			err = fmt.Errorf("%w: it must be positive", config.ErrBadDuration)
		}
		if err != nil {
			fail(w, fmt.Errorf("%w: expires in %q: %w (use e.g. 90m, 12h or 7d)", ErrBadForm, in, err))
			return
		}
		spec.ExpiresIn = d
	}
	ctx, cancel := context.WithTimeout(r.Context(), actionTimeout)
	defer cancel()
	cred, err := admin.Mint(ctx, ss.m, spec)
	if err != nil {
		fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", cred.Name+".creds"))
	w.Header().Set("X-Cotal-Credential", cred.ID)
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(cred.Creds)
}

// revoke cuts a credential off at once (space.Mesh.Revoke), unless the mesh uses it itself
// (own): that is refused with ErrOwnCredential.
func (c *Console) revoke(w http.ResponseWriter, r *http.Request, ss *spaceState) {
	if !parseForm(w, r) {
		return
	}
	id := r.PostForm.Get("id")
	if id == ss.e.ID() {
		fail(w, fmt.Errorf("%w: it is the console's own credential", ErrOwnCredential))
		return
	}
	recs, err := ss.m.Credentials(ss.name)
	if err != nil {
		fail(w, err)
		return
	}
	for _, rec := range recs {
		if rec.ID == id && own(rec) {
			fail(w, fmt.Errorf("%w: %s is valid inside the mesh's process only and goes when the mesh stops", ErrOwnCredential, rec.Name))
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), actionTimeout)
	defer cancel()
	if err := ss.m.Revoke(ctx, ss.name, id); err != nil {
		fail(w, err)
		return
	}
	reply(w, map[string]string{"revoked": id})
}

// own reports whether rec is a credential of the running mesh's own process: one the mesh
// minted valid for in-process connections only (space.Mesh.Endpoint), such as the console's
// and `cotal up`'s roster reader (cli-up-presence). Revoking one would cut off a part of the
// mesh that cannot mint itself another; the registry forgets them at the next start.
func own(rec space.CredentialInfo) bool { return rec.InProcessOnly }

// setChannel changes a channel's class, replay and description as `cotal channels set` does:
// an empty field keeps the current value, and "clear description" empties the description.
func (c *Console) setChannel(w http.ResponseWriter, r *http.Request, ss *spaceState) {
	if !parseForm(w, r) {
		return
	}
	u, err := channelUpdate(r)
	if err != nil {
		fail(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), actionTimeout)
	defer cancel()
	cfg, err := ss.m.SetChannel(ctx, ss.name, u)
	if errors.Is(err, space.ErrUnknownChannel) {
		err = fmt.Errorf(`%w; check the name, or tick "create" to configure it before its first message`, err)
	}
	if err != nil {
		fail(w, err)
		return
	}
	reply(w, cfg)
}

func channelUpdate(r *http.Request) (space.ChannelUpdate, error) {
	f := r.PostForm
	u := space.ChannelUpdate{Channel: strings.TrimSpace(f.Get("channel")), Create: f.Get("create") != ""}
	if v := f.Get("class"); v != "" {
		class := wire.DeliveryClass(v)
		u.DeliveryClass = &class
	}
	switch v := f.Get("replay"); v {
	case "":
	case "on", "off":
		on := v == "on"
		u.Replay = &on
	default:
		return u, fmt.Errorf("%w: replay %q: use on or off", ErrBadForm, v)
	}
	// An empty description field keeps the description; clearing it (the CLI's
	// --description "") takes its own box, so that an untouched field never erases one.
	switch v := strings.TrimSpace(f.Get("description")); {
	case f.Get("clearDescription") != "" && v != "":
		return u, fmt.Errorf("%w: a description and \"clear description\" together: choose one", ErrBadForm)
	case f.Get("clearDescription") != "":
		u.Description = new(string)
	case v != "":
		u.Description = &v
	}
	if u.Replay == nil && u.DeliveryClass == nil && u.Description == nil {
		return u, fmt.Errorf("%w: nothing to change: set a class, replay or description, or clear the description", ErrBadForm)
	}
	return u, nil
}

// parseForm reads an action's url-encoded body, bounded, and answers 400 itself when it
// cannot.
func parseForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		fail(w, fmt.Errorf("%w: %w", ErrBadForm, err))
		return false
	}
	return true
}

// list splits a comma- or space-separated list of channels.
func list(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// fail answers err as JSON {"error": ...} with the status its kind calls for.
func fail(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(statusOf(err))
	_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
}

// statuses map the mesh's errors to HTTP statuses as internal/cli/admin does.
var statuses = []struct {
	err    error
	status int
}{
	{ErrBadForm, http.StatusBadRequest},
	{ErrOwnCredential, http.StatusForbidden},
	{provisioner.ErrInvalidRequest, http.StatusBadRequest},
	{provisioner.ErrInvalidGrant, http.StatusBadRequest},
	{provisioner.ErrGrantsNotAllowed, http.StatusBadRequest},
	{provisioner.ErrUnknownProfile, http.StatusBadRequest},
	{wire.ErrInvalidChannel, http.StatusBadRequest},
	{wire.ErrInvalidChannelConfig, http.StatusBadRequest},
	{endpoint.ErrInvalidRead, http.StatusBadRequest},
	{ErrBadPage, http.StatusBadRequest},
	{provisioner.ErrUnknownCredential, http.StatusNotFound},
	{space.ErrUnknownChannel, http.StatusNotFound},
	{space.ErrNoSuchSpace, http.StatusNotFound},
	{space.ErrOpenMode, http.StatusConflict},
	{space.ErrContended, http.StatusConflict},
	{space.ErrClosed, http.StatusServiceUnavailable},
}

func statusOf(err error) int {
	for _, s := range statuses {
		if errors.Is(err, s.err) {
			return s.status
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}
