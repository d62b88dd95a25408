package broker

import (
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"
)

// violationMarkers are the texts of nats-server's per-client refusal lines that a client can
// provoke at will: a permissions violation per publish or subscription, a payload over the
// limit, a connection past the account's limit. Each is rate-limited per identity.
var violationMarkers = []string{
	"Publish Violation",
	"Subscription Violation",
	"Maximum Payload Violation",
	"maximum account active connections exceeded",
}

// clientIdentity finds the authenticated user in a client line's prefix, which nats-server
// writes as `- "<account>/<user label>" -`.
var clientIdentity = regexp.MustCompile(`"[^"/]+/([^"]+)" - `)

// violationLimiter keeps a hostile client from flooding the log (docs/hostile-agents.md
// "Provokable log lines are paced"; without it 20 000 denied publishes wrote 20 012 error
// lines): the first refusal line of an identity and kind is logged at once, the next ones
// within every are only counted, and when every has passed one summary line says how many were
// held back and shows the last. An identity writes at most two lines of a kind per every, and
// no refusal goes unrecorded.
type violationLimiter struct {
	log   *slog.Logger
	every time.Duration

	mu      sync.Mutex
	windows map[string]*violationWindow // open windows by identity and kind
	stopped bool
}

// violationWindow is one identity's and kind's open window.
type violationWindow struct {
	identity, kind string
	held           int
	last           string
	timer          *time.Timer
}

func newViolationLimiter(log *slog.Logger, every time.Duration) *violationLimiter {
	return &violationLimiter{log: log, every: every, windows: map[string]*violationWindow{}}
}

// admit reports whether the error line msg logs now. A line that is not a client refusal,
// or any line when the limiter is off (every is zero), always does.
func (v *violationLimiter) admit(msg string) bool {
	if v.every <= 0 {
		return true
	}
	kind := ""
	for _, m := range violationMarkers {
		if strings.Contains(msg, m) {
			kind = m
			break
		}
	}
	if kind == "" {
		return true
	}
	identity := "unauthenticated"
	if m := clientIdentity.FindStringSubmatch(msg); m != nil {
		identity = m[1]
	}
	return v.admitAs(identity, kind, msg)
}

// admitAs reports whether line, a refusal of kind to identity, logs now; it is admit for
// refusals the broker makes itself (userconns.go), which need no parsing.
func (v *violationLimiter) admitAs(identity, kind, line string) bool {
	if v.every <= 0 {
		return true
	}
	key := identity + "\x00" + kind
	v.mu.Lock()
	defer v.mu.Unlock()
	if w, ok := v.windows[key]; ok {
		w.held++
		w.last = line
		return false
	}
	if v.stopped {
		return true
	}
	w := &violationWindow{identity: identity, kind: kind}
	w.timer = time.AfterFunc(v.every, func() { v.close(key) })
	v.windows[key] = w
	return true
}

// close ends the window under key and logs its summary when it held lines back. It logs
// under the lock, so no summary can follow stop.
func (v *violationLimiter) close(key string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if w, ok := v.windows[key]; ok {
		delete(v.windows, key)
		v.summarize(w)
	}
}

func (v *violationLimiter) summarize(w *violationWindow) {
	if w.held == 0 {
		return
	}
	v.log.Error("client refusals held back: "+w.kind, "identity", w.identity, "count", w.held,
		"within", v.every, "last", w.last)
}

// stop ends every open window at once, logging their summaries, so nothing is lost or logged
// after the broker has stopped.
func (v *violationLimiter) stop() {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.stopped = true
	for key, w := range v.windows {
		w.timer.Stop()
		delete(v.windows, key)
		v.summarize(w)
	}
}
