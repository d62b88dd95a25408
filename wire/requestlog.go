package wire

import (
	"sync"
	"time"
)

// requestLogSize bounds how many control request ids the service remembers; requestLogWindow
// how long. A duplicate arrives within milliseconds of its original, so both are generous.
const (
	requestLogSize   = 4096
	requestLogWindow = time.Minute
)

// RequestLog remembers the ids of recent control requests (RequestIDHeader) so that a
// request the broker delivered twice is served once; every cotal control service (delivery,
// manager) consults one before it admits a request. The zero value is ready. nats-server re-registers an account's
// imports whenever its JWT changes (every mint of a new identity and every revocation re-signs
// the agent account, wire/accounts.go), and a request crossing the import at that moment can
// reach the service twice. Served twice, a durable join could land after the leave that followed
// it and leave a membership active that its owner had ended.
type RequestLog struct {
	mu    sync.Mutex
	seen  map[string]time.Time
	order []string
}

// Duplicate reports whether the request id of sender was seen within the window, and records
// it if not. A request without an id (an older or foreign client) is never a duplicate.
func (l *RequestLog) Duplicate(sender, id string, now time.Time) bool {
	if id == "" {
		return false
	}
	key := sender + " " + id
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[string]time.Time{}
	}
	if at, ok := l.seen[key]; ok && now.Sub(at) < requestLogWindow {
		return true
	}
	l.seen[key] = now
	l.order = append(l.order, key)
	if len(l.order) > requestLogSize {
		delete(l.seen, l.order[0])
		l.order = l.order[1:]
	}
	return false
}
