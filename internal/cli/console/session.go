package console

import (
	"crypto/rand"
	"crypto/subtle"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"
)

// A session is what the console token is traded for: two random secrets, one in the path of
// every URL of the console's page (/s/ID/) and one in a cookie, each worthless without the
// other. A browser sends its cookies for 127.0.0.1 to every port on it, so a page another
// local user serves on 127.0.0.1 receives the cookie; it never sees the path, which stays
// in this origin's URLs. A URL copied out of the address bar lacks the cookie.
const (
	// sessionLife bounds a session from its start, the cookie's Max-Age too.
	sessionLife = 12 * time.Hour
	// sessionIdle ends a session no request has used for that long; an open page asks every
	// tickEvery, so only a closed one idles.
	sessionIdle = 30 * time.Minute
	// maxSessions bounds the sessions kept; opening one more ends the least recently used.
	maxSessions = 32
)

// sessionPrefix starts the path of every URL of a session: /s/ID/.
const sessionPrefix = "/s/"

// session is one browser's sign-in, bound to the Host it was opened on (host:port).
type session struct {
	id, cookie string
	host       string
	start      time.Time
	used       time.Time
}

// path is the root of the session's console, where the sign-in redirects.
func (s *session) path() string { return sessionPrefix + s.id + "/" }

// ends is when the session ends at the latest, whatever its use.
func (s *session) ends() time.Time { return s.start.Add(sessionLife) }

// cookieName is the cookie of the sessions opened on host: one name per port, so consoles of
// two meshes on one machine keep theirs apart (cookies ignore ports).
func cookieName(host string) string {
	_, port, err := net.SplitHostPort(host)
	if err != nil {
		port = "80"
	}
	return "cotal_console_" + port
}

// sessions are the console's open sessions.
type sessions struct {
	now func() time.Time

	mu   sync.Mutex
	byID map[string]*session
}

func newSessions() *sessions {
	return &sessions{now: time.Now, byID: map[string]*session{}}
}

// open starts a session for a browser that showed the token on host.
func (ss *sessions) open(host string) *session {
	now := ss.now()
	s := &session{id: rand.Text() + rand.Text(), cookie: rand.Text() + rand.Text(), host: host, start: now, used: now}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.prune(now)
	if len(ss.byID) >= maxSessions {
		var oldest *session
		for _, o := range ss.byID {
			if oldest == nil || o.used.Before(oldest.used) {
				oldest = o
			}
		}
		delete(ss.byID, oldest.id)
	}
	ss.byID[s.id] = s
	return s
}

// prune forgets the sessions that have ended by now.
func (ss *sessions) prune(now time.Time) {
	for id, s := range ss.byID {
		if !ss.live(s, now) {
			delete(ss.byID, id)
		}
	}
}

func (ss *sessions) live(s *session, now time.Time) bool {
	return now.Before(s.ends()) && now.Sub(s.used) < sessionIdle
}

// admit returns the session id names when the request on host carries its cookie and the
// session is live and was opened on host; it marks the session used. Otherwise it says which
// of these failed.
func (ss *sessions) admit(id, host, cookie string) (*session, error) {
	now := ss.now()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.byID[id]
	switch {
	case !ok:
		return nil, ErrNoSession
	case !ss.live(s, now):
		delete(ss.byID, id)
		return nil, ErrNoSession
	case !strings.EqualFold(s.host, host):
		return nil, fmt.Errorf("%w: it was opened on %s, and this request names %q", ErrSessionElsewhere, s.host, host)
	case subtle.ConstantTimeCompare([]byte(cookie), []byte(s.cookie)) != 1:
		return nil, ErrSessionCookie
	}
	s.used = now
	return s, nil
}
