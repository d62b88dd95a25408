package console

import (
	"crypto/subtle"
	"net/http"
)

// cookieName holds the token after the first visit, so it leaves the address bar.
const cookieName = "cotal_console"

// authorize admits a request that carries the token, in the cookie or (once, from the URL
// `cotal up` prints) in the query, and answers the rest itself: 401 with no token, 403 with a
// wrong one or with a state change from another origin. A page visit with the token in the
// query sets the cookie and is redirected to the same page without it (other parameters, such
// as the space, are kept), so the token is not left in the history or sent on in a Referer.
func (c *Console) authorize(w http.ResponseWriter, r *http.Request) bool {
	fromQuery := r.URL.Query().Get("token")
	got := fromQuery
	if ck, err := r.Cookie(cookieName); err == nil && got == "" {
		got = ck.Value
	}
	switch {
	case got == "":
		http.Error(w, "no console token: open the console URL that `cotal up` prints", http.StatusUnauthorized)
		return false
	case subtle.ConstantTimeCompare([]byte(got), []byte(c.token)) != 1:
		http.Error(w, "wrong console token: open the console URL that this run of `cotal up` prints", http.StatusForbidden)
		return false
	case r.Method != http.MethodGet && r.Method != http.MethodHead && !sameOrigin(r):
		http.Error(w, "cross-site request refused", http.StatusForbidden)
		return false
	}
	if fromQuery != "" && r.Method == http.MethodGet && r.URL.Path == "/" {
		http.SetCookie(w, &http.Cookie{Name: cookieName, Value: c.token, Path: "/",
			HttpOnly: true, SameSite: http.SameSiteStrictMode})
		q := r.URL.Query()
		q.Del("token")
		to := "/"
		if len(q) > 0 {
			to += "?" + q.Encode()
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
		return false
	}
	return true
}

// sameOrigin is the CSRF defence beside the SameSite=Strict cookie: a state change must come
// from a page of this console. Browsers send Origin on every POST; Sec-Fetch-Site covers one
// that omits it. A request with neither (not from a browser) is refused too.
func sameOrigin(r *http.Request) bool {
	if o := r.Header.Get("Origin"); o != "" {
		return o == "http://"+r.Host
	}
	return r.Header.Get("Sec-Fetch-Site") == "same-origin"
}

// secureHeaders keep the console's pages to its own scripts and styles, out of frames, and
// its URLs (which may carry the token) out of Referer headers.
func secureHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
}
