package console

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

// readTimeout bounds the broker reads behind one view.
const readTimeout = 5 * time.Second

// historyPage is how many messages one page of channel history shows; historyPages bounds
// how far back paging goes.
const historyPage, historyPages = 25, 40

// views are the fragments the page is built from and that its script reloads by name.
var views = map[string]func(ctx context.Context, ss *spaceState, r *http.Request) (any, error){
	"roster":      rosterView,
	"agents":      agentsView,
	"channels":    channelsView,
	"delivery":    deliveryView,
	"health":      healthView,
	"plots":       plotsView,
	"credentials": credentialsView,
	"history":     historyView,
}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"plot":  svgPlot,
	"short": func(id string) string { return id[:min(len(id), 8)] },
}

// page renders the whole console with every view filled in, so it reads without script.
func (c *Console) page(w http.ResponseWriter, r *http.Request, ss *spaceState) {
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	errs := map[string]string{}
	data := map[string]any{"Space": ss.name, "Spaces": ss.m.Spaces(), "Errors": errs}
	for name, v := range views {
		if ctx.Err() != nil {
			return // the client left (or the page ran out of time): no one reads the rest
		}
		d, err := v(ctx, ss, r)
		if err != nil {
			errs[name] = err.Error()
		}
		data[name] = d
	}
	c.render(w, "page", data)
}

// view renders one fragment by name.
func (c *Console) view(w http.ResponseWriter, r *http.Request, ss *spaceState) {
	name := r.PathValue("name")
	v, ok := views[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	d, err := v(ctx, ss, r)
	if err != nil {
		http.Error(w, err.Error(), statusOf(err))
		return
	}
	c.render(w, name, d)
}

func (c *Console) render(w http.ResponseWriter, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := c.pages.ExecuteTemplate(w, name, data); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// peerRow is one roster line; Status is the word (SPEC §6), never only a colour.
type peerRow struct {
	Name, ID, Role, Kind, Status, Activity, LastSeen string
	Online                                           bool
}

// rosterData is one page of the roster, online peers first.
type rosterData struct {
	Rows []peerRow
	Page pager
}

func rosterView(ctx context.Context, ss *spaceState, r *http.Request) (any, error) {
	var rows []peerRow
	now := time.Now()
	for _, p := range ss.e.Roster().Snapshot() {
		if p.Removed {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c := p.Presence.Card
		status := string(p.Presence.Status)
		if !p.Online {
			status = string(wire.StatusOffline)
		}
		rows = append(rows, peerRow{Name: c.Name, ID: c.ID, Role: c.Role, Kind: string(c.Kind),
			Status: status, Activity: p.Presence.Activity, LastSeen: ago(now, p.LastSeen), Online: p.Online})
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Online != rows[j].Online {
			return rows[i].Online
		}
		return rows[i].Name < rows[j].Name
	})
	page, err := pageOf(r, "roster", len(rows))
	if err != nil {
		return nil, err
	}
	return rosterData{Rows: rows[page.From:page.To], Page: page}, nil
}

// ago says how long before now t was, coarsely.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t).Round(time.Second)
	switch {
	case d < 2*time.Second:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	}
	return t.Format("2006-01-02 15:04")
}

// channelRow is one channel with its effective config (SPEC §7), the agents whose
// credentials subscribe to it, and its live message rate.
type channelRow struct {
	Name, Class, Replay, Window, Description string
	Messages                                 uint64
	Members                                  []string
	Rate                                     string
}

// channelsData is one page of the space's channels, by name.
type channelsData struct {
	Rows     []channelRow
	Defaults string
	Page     pager
}

// channelsView reads every channel (one stream info and one registry read, linear in the
// channels) and renders one page of them: the work per row, members and rate, is done for
// the rows shown only.
func channelsView(ctx context.Context, ss *spaceState, r *http.Request) (any, error) {
	list, err := ss.e.Channels(ctx)
	if err != nil {
		return nil, err
	}
	page, err := pageOf(r, "channels", len(list.Channels))
	if err != nil {
		return nil, err
	}
	recs, _ := ss.m.Credentials(ss.name) // open mode has none: no members to show
	agents := activeAgents(recs)
	out := channelsData{Defaults: "durable, replay on (SPEC §7)", Page: page}
	if d := list.Defaults; d != nil {
		out.Defaults = fmt.Sprintf("class %s, replay %s", wire.EffectiveClass(nil, d), onOff(wire.EffectiveReplay(nil, d)))
	}
	for _, ch := range list.Channels[page.From:page.To] {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		row := channelRow{Name: ch.Name, Class: string(ch.Class), Replay: onOff(ch.Replay),
			Messages: ch.Messages, Members: members(agents, ch.Name),
			Rate: fmt.Sprintf("%.1f/min", ss.sample.rate(ch.Name))}
		if ch.ReplayWindow > 0 {
			row.Window = ch.ReplayWindow.String()
		}
		if ch.Config != nil {
			row.Description = ch.Config.Description
		}
		out.Rows = append(out.Rows, row)
	}
	return out, nil
}

// activeAgents are the agent credentials of recs that are active now.
func activeAgents(recs []space.CredentialInfo) []space.CredentialInfo {
	var out []space.CredentialInfo
	now := time.Now()
	for _, r := range recs {
		if r.Profile == provisioner.ProfileAgent && r.Active(now) {
			out = append(out, r)
		}
	}
	return out
}

// members are the names of the agents whose subscribe set covers channel.
func members(agents []space.CredentialInfo, channel string) []string {
	var out []string
	for _, r := range agents {
		for _, p := range r.Grants.Subscribe {
			if wire.MatchChannel(p, channel) {
				out = append(out, r.Name)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// deliveryData is what waits for each active agent, one page of them, and the backstop's
// counters for the space.
type deliveryData struct {
	Members  []space.MemberBacklog
	Backstop any
	Page     pager
}

func deliveryView(ctx context.Context, ss *spaceState, r *http.Request) (any, error) {
	status, err := ss.m.Status(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range status.Spaces {
		if s.Name != ss.name {
			continue
		}
		members := make([]space.MemberBacklog, 0, len(s.Members))
		for _, m := range s.Members {
			if !provisioner.IsCommandName(m.Name) {
				members = append(members, m)
			}
		}
		page, err := pageOf(r, "delivery", len(members))
		if err != nil {
			return nil, err
		}
		return deliveryData{Members: members[page.From:page.To], Backstop: s.Backstop, Page: page}, nil
	}
	return nil, fmt.Errorf("%w: %s", space.ErrNoSuchSpace, ss.name)
}

// healthRow is one component: "ok" or what is wrong, in words.
type healthRow struct {
	Name, State string
	OK          bool
}

func healthView(_ context.Context, ss *spaceState, _ *http.Request) (any, error) {
	var rows []healthRow
	for _, h := range ss.m.Health() {
		row := healthRow{Name: h.Name, State: "ok", OK: h.Err == nil}
		if h.Err != nil {
			row.State = h.Err.Error()
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// plotsData are the plots' lines; More counts the channels with messages that the rate plot
// leaves out (it draws the plotted busiest).
type plotsData struct {
	Rates, Lag []series
	RateKey    []legendEntry
	More       int
}

func plotsView(_ context.Context, ss *spaceState, _ *http.Request) (any, error) {
	rates, more := ss.sample.rates()
	return plotsData{Rates: rates, Lag: []series{ss.sample.lag()}, RateKey: legend(rates), More: more}, nil
}

// credentialRow is one credential of the space, never its key material.
type credentialRow struct {
	ID, Name, Profile, Role, Expires, State string
	Active                                  bool
	// Own marks a credential of the mesh's own process (see own), which the console does not
	// offer to revoke.
	Own bool
}

// credentialsData is one page of the space's credentials, active ones first.
type credentialsData struct {
	Rows []credentialRow
	Page pager
}

func credentialsView(ctx context.Context, ss *spaceState, req *http.Request) (any, error) {
	recs, err := ss.m.Credentials(ss.name)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	rows := make([]credentialRow, 0, len(recs))
	for _, r := range recs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if provisioner.IsCommandName(r.Name) {
			continue // a command's own short-lived credential, hidden as `cotal auth list` hides it
		}
		row := credentialRow{ID: r.ID, Name: r.Name, Profile: string(r.Profile), Role: r.Grants.Role,
			Expires: "never", State: "active", Active: r.Active(now)}
		if !r.ExpiresAt.IsZero() {
			row.Expires = r.ExpiresAt.Format("2006-01-02 15:04")
		}
		switch {
		case r.Revoked:
			row.State = "revoked"
		case !row.Active:
			row.State = "expired"
		case r.ID == ss.e.ID():
			row.State, row.Own = "active (this console)", true
		case own(r):
			row.State, row.Own = "active (in use by this mesh)", true
		}
		rows = append(rows, row)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Active != rows[j].Active {
			return rows[i].Active
		}
		return rows[i].Name < rows[j].Name
	})
	page, err := pageOf(req, "credentials", len(rows))
	if err != nil {
		return nil, err
	}
	return credentialsData{Rows: rows[page.From:page.To], Page: page}, nil
}

// historyChoices bounds the channels the history form offers in its list; a space with more
// is given a box to type the channel in, with the first historyChoices as suggestions.
const historyChoices = 100

// historyData is one page of a channel's stored messages, newest page first (page 0).
type historyData struct {
	Channel string
	// Channels are the first historyChoices channels by name; Typed says there are more, so
	// the form takes a typed name.
	Channels     []string
	Typed        bool
	Items        []item
	Page         int
	Older, Newer int
	HasOlder     bool
}

func historyView(ctx context.Context, ss *spaceState, r *http.Request) (any, error) {
	list, err := ss.e.Channels(ctx)
	if err != nil {
		return nil, err
	}
	out := historyData{Channel: r.URL.Query().Get("channel"), Typed: len(list.Channels) > historyChoices}
	for _, ch := range list.Channels[:min(len(list.Channels), historyChoices)] {
		out.Channels = append(out.Channels, ch.Name)
	}
	if out.Channel == "" {
		return out, nil
	}
	page := 0
	if p := r.URL.Query().Get("page"); p != "" {
		var err error
		if page, err = strconv.Atoi(p); err != nil || page < 0 || page >= historyPages {
			return nil, fmt.Errorf("%w: page %q, want 0 to %d", endpoint.ErrInvalidRead, p, historyPages-1)
		}
	}
	// History reads the last n messages; page p is the oldest historyPage of the last
	// (p+1)*historyPage, one more read to know whether an older page exists.
	want := (page+1)*historyPage + 1
	got, err := ss.e.History(ctx, out.Channel, want)
	if err != nil {
		return nil, err
	}
	out.Page, out.Older, out.Newer = page, page+1, page-1
	out.HasOlder = len(got) == want && page+1 < historyPages
	end := max(len(got)-page*historyPage, 0)
	start := max(end-historyPage, 0)
	if out.HasOlder {
		start = max(start, 1)
	}
	for _, d := range got[start:end] {
		out.Items = append(out.Items, ss.feed.itemOf(d))
	}
	return out, nil
}
