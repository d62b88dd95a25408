package console

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Refusals of a request before it reaches the console's routes.
var (
	// ErrNoToken means a sign-in without the token.
	ErrNoToken = errors.New("no console token: open the console URL that `cotal up` prints")
	// ErrWrongToken means a sign-in with a token that is not this run's.
	ErrWrongToken = errors.New("wrong console token: open the console URL that this run of `cotal up` prints")
	// ErrNoSession means a request outside any live session: none named, unknown, or ended.
	ErrNoSession = errors.New("no console session, or it ended: open the console URL that `cotal up` prints")
	// ErrSessionElsewhere means a session used under another Host than it was opened on.
	ErrSessionElsewhere = errors.New("this console session belongs to another address: open the console URL that `cotal up` prints")
	// ErrSessionCookie means a session's URL without its cookie: another browser, or a URL
	// copied out of one.
	ErrSessionCookie = errors.New("this console session belongs to another browser: open the console URL that `cotal up` prints")
	// ErrCrossSite means a state change that did not come from a page of the session.
	ErrCrossSite = errors.New("cross-site request refused: actions are POSTs from the console's own page")
)

// authStatus is the status of a refusal: 401 when signing in again helps, else 403.
func authStatus(err error) int {
	if errors.Is(err, ErrNoToken) || errors.Is(err, ErrNoSession) {
		return http.StatusUnauthorized
	}
	return http.StatusForbidden
}

// signIn trades the token in the query of "/" (the URL `cotal up` prints) for a session: the
// cookie is set and the browser is sent to the session's root, other parameters (such as the
// space) kept, so the token leaves the address bar and is never sent again.
func (c *Console) signIn(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "sign in with a GET of the console URL that `cotal up` prints", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	got := q.Get("token")
	if got == "" {
		http.Error(w, ErrNoToken.Error(), http.StatusUnauthorized)
		return
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(c.token)) != 1 {
		http.Error(w, ErrWrongToken.Error(), http.StatusForbidden)
		return
	}
	s := c.sessions.open(r.Host)
	http.SetCookie(w, &http.Cookie{Name: cookieName(s.host), Value: s.cookie, Path: "/",
		MaxAge: int(sessionLife.Seconds()), HttpOnly: true, SameSite: http.SameSiteStrictMode})
	q.Del("token")
	to := s.path()
	if len(q) > 0 {
		to += "?" + q.Encode()
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// admit returns r for the console's routes, its path without the session's prefix and its
// context ending with the session, when r belongs to a live session: under /s/ID/, on the
// Host the session was opened on, with its cookie, and for a state change with that origin.
func (c *Console) admit(r *http.Request) (*http.Request, context.CancelFunc, error) {
	rest, ok := strings.CutPrefix(r.URL.Path, sessionPrefix)
	id, rest, slash := strings.Cut(rest, "/")
	if !ok || !slash {
		return nil, nil, ErrNoSession
	}
	var cookie string
	if ck, err := r.Cookie(cookieName(r.Host)); err == nil {
		cookie = ck.Value
	}
	s, err := c.sessions.admit(id, r.Host, cookie)
	if err != nil {
		return nil, nil, err
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if o := r.Header.Get("Origin"); o != "http://"+s.host {
			return nil, nil, fmt.Errorf("%w (Origin %q, want http://%s)", ErrCrossSite, o, s.host)
		}
	}
	ctx, cancel := context.WithDeadline(r.Context(), s.ends())
	in := r.Clone(ctx)
	in.URL.Path, in.URL.RawPath = "/"+rest, ""
	return in, cancel, nil
}

// secureHeaders keep the console's pages to its own scripts and styles, out of frames, and
// its URLs (which carry the session) out of Referer headers.
func secureHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
}
