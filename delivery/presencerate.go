package delivery

import (
	"sync"
	"time"
)

// A presence row is rewritten by its own holder, and every watcher of the bucket receives each
// write: one agent rewriting a 60 KB row hundreds of times a second sends every watcher
// megabytes a second. The service sees every write (it follows the bucket) and measures each
// key's rate with a token bucket: a holder writes once per heartbeat (2 s) and on each change
// of status or activity, far below presenceBurst writes at once or presenceRate a second for
// long. Past it Config.OnPresenceFlood is told the key, at most once per presenceFloodEvery.
const (
	presenceRate       = 20.0 // writes a second a key may sustain
	presenceBurst      = 200  // writes a key may make at once
	presenceFloodEvery = 10 * time.Second
)

// presenceMeter is the per-key token buckets of the presence bucket's writers.
type presenceMeter struct {
	mu   sync.Mutex
	keys map[string]*writeBucket
}

type writeBucket struct {
	tokens   float64
	at       time.Time // when tokens was last brought up to date
	reported time.Time // last time the key was reported flooding
}

// write takes one write of key at now and reports whether key is flooding and due to be
// reported.
func (p *presenceMeter) write(key string, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.keys == nil {
		p.keys = map[string]*writeBucket{}
	}
	b, ok := p.keys[key]
	if !ok {
		b = &writeBucket{tokens: presenceBurst, at: now}
		p.keys[key] = b
	}
	b.tokens = min(presenceBurst, b.tokens+now.Sub(b.at).Seconds()*presenceRate)
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return false
	}
	if now.Sub(b.reported) < presenceFloodEvery {
		return false
	}
	b.reported = now
	return true
}
