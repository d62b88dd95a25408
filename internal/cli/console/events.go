package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// tickEvery is how often an open page is told to reload its views (roster ages, rates,
// backlogs), beside the roster changes it hears at once.
const tickEvery = 2 * time.Second

// events streams server-sent events to one page: first the held messages ("message"), then
// every new message as it arrives, "roster" when a peer comes, goes or changes, and "tick"
// every tickEvery. The stream ends with the request or the console's Endpoint.
func (c *Console) events(w http.ResponseWriter, r *http.Request, ss *spaceState) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	recent, msgs, stop := ss.feed.subscribe()
	defer stop()
	roster, cancel := ss.e.Roster().Subscribe()
	defer cancel()
	for _, it := range recent {
		writeEvent(w, "message", it)
	}
	flusher.Flush()
	tick := time.NewTicker(tickEvery)
	defer tick.Stop()
	for {
		select {
		case it := <-msgs:
			writeEvent(w, "message", it)
		case _, open := <-roster:
			if !open {
				return
			}
			writeEvent(w, "roster", nil)
		case <-tick.C:
			writeEvent(w, "tick", nil)
		case <-r.Context().Done():
			return
		case <-ss.e.Done():
			return
		}
		flusher.Flush()
	}
}

// writeEvent writes one event; its data is v as JSON, which has no newline.
func writeEvent(w http.ResponseWriter, name string, v any) {
	data, _ := json.Marshal(v)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
}
