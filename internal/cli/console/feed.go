package console

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/wire"
)

// feedKeep is how many recent messages the feed holds for a page that opens: the backfill
// it shows before live ones arrive.
const feedKeep = 300

// feedSeed is how many stored messages the feed reads on Start, so the first page is not empty.
const feedSeed = 100

// subscriberBuffer is each open page's queue; a page that falls this far behind loses
// messages (it reloads the feed by reconnecting) rather than holding the others back.
const subscriberBuffer = 256

// item is one message as the feed shows it.
type item struct {
	ID      string `json:"id"`
	Time    string `json:"time"`
	Kind    string `json:"kind"`
	Channel string `json:"channel,omitempty"`
	From    string `json:"from"`
	To      string `json:"to,omitempty"`
	Text    string `json:"text"`
	Stored  bool   `json:"stored,omitempty"`
}

// feed holds the recent messages, each once, and hands new ones to every open page. It also
// counts live messages per channel for the rate plot, until the sampler drains them.
type feed struct {
	mu    sync.Mutex
	ring  []item
	ids   map[string]bool
	subs  map[chan item]bool
	fresh map[string]uint64
	// names shows an instance id by the name its credential was minted with (the roster's
	// name, which its holder chose, where the mesh mints nothing); sender shows a message's
	// sender, marking a claimed name that is not the minted one (endpoint.ShowName).
	names  func(id string) string
	sender func(wire.EndpointRef) string
}

func newFeed() *feed {
	return &feed{ids: map[string]bool{}, subs: map[chan item]bool{}, fresh: map[string]uint64{},
		names: func(id string) string { return id }, sender: func(r wire.EndpointRef) string { return r.Name }}
}

// follow taps every channel, DM and anycast e may read (an admin reads all, SPEC Appendix B)
// and then adds the last stored channel messages, so a page opened at once has a backfill.
func (f *feed) follow(ctx context.Context, e *endpoint.Endpoint) error {
	f.names = func(id string) string {
		if rec, found, err := e.MintedName(ctx, id); err == nil && found {
			return rec.Name
		}
		if p, ok := e.Roster().Peer(id); ok {
			return p.Presence.Card.Name
		}
		return id
	}
	f.sender = func(r wire.EndpointRef) string { return e.SenderName(ctx, r) }
	err := e.Follow(ctx, endpoint.FollowOptions{Unicast: true}, func(d endpoint.Delivery) { f.add(d, true) })
	if err != nil {
		return fmt.Errorf("console feed: %w", err)
	}
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stored, err := e.History(hctx, ">", feedSeed)
	if err != nil {
		return fmt.Errorf("console feed history: %w", err)
	}
	for _, d := range stored {
		f.add(d, false)
	}
	return nil
}

// add records d once: a message seen live and again in the history is one message.
func (f *feed) add(d endpoint.Delivery, live bool) {
	it := f.itemOf(d)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ids[it.ID] {
		return
	}
	f.ids[it.ID] = true
	if live && it.Channel != "" {
		f.fresh[it.Channel]++
	}
	f.ring = append(f.ring, it)
	if len(f.ring) > feedKeep {
		delete(f.ids, f.ring[0].ID)
		f.ring = f.ring[1:]
	}
	if live {
		for c := range f.subs {
			select {
			case c <- it:
			default:
			}
		}
	}
}

// subscribe returns the held messages, oldest first, and a queue of the ones after them.
func (f *feed) subscribe() ([]item, chan item, func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := make(chan item, subscriberBuffer)
	f.subs[c] = true
	recent := append([]item(nil), f.ring...)
	return recent, c, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.subs, c)
	}
}

// drain returns the live messages per channel since the last drain and starts counting anew.
func (f *feed) drain() map[string]uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.fresh
	f.fresh = map[string]uint64{}
	return out
}

// itemOf is d as the feed shows it: DMs name their receiver, anycasts their role.
func (f *feed) itemOf(d endpoint.Delivery) item {
	m := d.Message
	it := item{ID: m.ID, Time: time.UnixMilli(m.TS).Format("15:04:05"), Kind: string(d.Meta.Kind),
		Channel: d.Meta.Channel, From: f.sender(m.From), Text: textOf(m.Parts), Stored: d.Meta.Historical}
	switch d.Meta.Kind {
	case endpoint.MetaDM:
		it.To = f.names(m.To)
	case endpoint.MetaAnycast:
		it.To = "role " + m.ToService
	}
	return it
}

// textOf joins a message's text parts; other parts are named by their kind.
func textOf(parts []wire.Part) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteString(" ")
		}
		if p.Kind == wire.PartText {
			b.WriteString(p.Text)
		} else {
			fmt.Fprintf(&b, "[%s]", p.Kind)
		}
	}
	return b.String()
}
