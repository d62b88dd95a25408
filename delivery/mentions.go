package delivery

import (
	"strings"
	"time"

	"github.com/cotal-go/cotal/endpoint"
)

// resolveMention returns the instance a lowercased @mention names (SPEC §4): the unique
// instance present at publish time, at, whose lowercased card name equals name. Present means
// a row whose status is not offline and whose heartbeat is within the liveness window of at
// (SPEC §6). Zero or several matches resolve to nothing: an ambiguous name never yields a copy.
func resolveMention(presence *kvCache[endpoint.Presence], name string, at time.Time) (string, bool) {
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" {
		return "", false
	}
	var found string
	matches := 0
	presence.each(func(id string, p endpoint.Presence) {
		if strings.ToLower(p.Card.Name) != name || p.Status == endpoint.StatusOffline ||
			p.Stale(at, endpoint.DefaultLivenessWindow) {
			return
		}
		matches++
		found = id
	})
	if matches != 1 {
		return "", false
	}
	return found, true
}

// decodePresenceRow adapts endpoint.DecodePresence to the cache.
func decodePresenceRow(key string, data []byte) (endpoint.Presence, error) {
	p, err := endpoint.DecodePresence(key, data)
	if err != nil {
		return endpoint.Presence{}, err
	}
	return *p, nil
}
