package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/termsafe"
	"github.com/cotal-go/cotal/wire"
)

// colorOn reports whether w gets ANSI colour: only a terminal, never with --json, and never
// when NO_COLOR is set (no-color.org).
func colorOn(w io.Writer, asJSON bool) bool {
	if asJSON || os.Getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// ANSI styles used on a terminal.
const (
	ansiReset = "\x1b[0m"
	ansiDim   = "\x1b[2m"
	ansiBold  = "\x1b[1m"
	ansiCyan  = "\x1b[36m"
	ansiMag   = "\x1b[35m"
)

// style wraps s in an ANSI style when colour is on.
func style(on bool, code, s string) string {
	if !on {
		return s
	}
	return code + s + ansiReset
}

// item is one message a read command prints: the envelope and how it reached the reader.
type item struct {
	Kind       endpoint.MetaKind  `json:"kind"`
	Channel    string             `json:"channel,omitempty"`
	Historical bool               `json:"historical"`
	Durable    bool               `json:"durable,omitempty"`
	Seq        uint64             `json:"seq,omitempty"`
	Message    *wire.CotalMessage `json:"message"`
}

// itemOf is how a read command prints a delivery the Endpoint checked (SPEC §4, §5).
func itemOf(d endpoint.Delivery) item {
	return item{Kind: d.Meta.Kind, Channel: d.Meta.Channel, Historical: d.Meta.Historical,
		Durable: d.Meta.Durable, Seq: d.Meta.Seq, Message: d.Message}
}

// printer writes items as lines: human text by default, one JSON object per line with --json.
type printer struct {
	w       io.Writer
	asJSON  bool
	color   bool
	markOld bool // suffix historical items with "(history)"
	seen    map[string]bool
	dropped io.Writer // where malformed copies are reported
	// self is the reader's instance id; a DM to anyone else (an admin's tail) names its
	// recipient, by nameOf when it knows the id.
	self   string
	nameOf func(id string) string
	// sender is how a message's sender is shown (senderNames); nil shows from.name as claimed.
	sender func(wire.EndpointRef) string
	// stopped is closed once the command is stopping (Ctrl-C): the disconnect its own close
	// causes then is not a lost mesh. Nil for a command that never stops on its own.
	stopped <-chan struct{}
}

func newPrinter(w, errw io.Writer, asJSON, markOld bool) *printer {
	return &printer{w: w, dropped: errw, asJSON: asJSON, color: colorOn(w, asJSON), markOld: markOld, seen: map[string]bool{}}
}

// print writes it once: a message id already printed is skipped, so a copy that arrives on
// two paths (live and history, live and durable) shows once (SPEC §7 step 5).
func (p *printer) print(it item) error {
	if p.seen[it.Message.ID] {
		return nil
	}
	p.seen[it.Message.ID] = true
	if p.asJSON {
		return json.NewEncoder(p.w).Encode(it) // the exact data, for programs
	}
	_, err := fmt.Fprintln(p.w, p.line(it))
	return err
}

// reportDropped is an Endpoint's OnEvent: it reports each copy the Endpoint terminated for
// failing the receive checks, which is never printed. The subject and the reason can quote
// what the sender wrote, so both are escaped.
func (p *printer) reportDropped(ev endpoint.Event) {
	if ev.Kind == endpoint.EventRejected {
		fmt.Fprintf(p.dropped, "cotal: dropped a copy on %s: %s\n", termsafe.String(ev.Subject), termsafe.String(fmt.Sprint(ev.Err)))
	}
}

// reportConnection is a following command's OnEvent: reportDropped, and a line when the
// connection to the mesh is lost and when it is back, so a quiet tail is not taken for a
// quiet space.
func (p *printer) reportConnection(ev endpoint.Event) {
	switch ev.Kind {
	case endpoint.EventDisconnected:
		if p.stopping() {
			return
		}
		cause := ""
		if ev.Err != nil {
			cause = " (" + termsafe.String(ev.Err.Error()) + ")"
		}
		fmt.Fprintf(p.dropped, "cotal: %s lost the mesh%s; reconnecting\n", clock(ev.Time), cause)
	case endpoint.EventReconnected:
		fmt.Fprintf(p.dropped, "cotal: %s reconnected to the mesh\n", clock(ev.Time))
	default:
		p.reportDropped(ev)
	}
}

// stopping reports whether the command is stopping.
func (p *printer) stopping() bool {
	select {
	case <-p.stopped:
		return true
	default:
		return false
	}
}

// line is the human form: time, where (channel, dm or svc:role), sender, text. Every string
// the sender chose is escaped (termsafe), so the line holds no control of the sender's.
func (p *printer) line(it item) string {
	m := it.Message
	where := "#" + termsafe.String(it.Channel)
	switch it.Kind {
	case endpoint.MetaDM:
		where = "dm"
	case endpoint.MetaAnycast:
		where = "svc:" + termsafe.String(m.ToService)
	}
	ts := clock(time.UnixMilli(m.TS))
	text := partsText(m.Parts)
	name := m.From.Name
	if p.sender != nil {
		name = p.sender(m.From)
	}
	from := style(p.color, ansiBold, termsafe.String(name))
	if it.Kind == endpoint.MetaDM && m.To != "" && m.To != p.self {
		from += " → " + style(p.color, ansiBold, termsafe.String(p.recipient(m.To)))
	}
	s := fmt.Sprintf("%s %s %s: %s", style(p.color, ansiDim, ts), style(p.color, ansiCyan, where), from, text)
	if it.Historical && p.markOld {
		s += " " + style(p.color, ansiDim, "(history)")
	}
	if it.Kind == endpoint.MetaDM && p.color {
		s = style(true, ansiMag, "»") + " " + s
	}
	return s
}

// recipient names the instance id: its display name when known, else its id.
func (p *printer) recipient(id string) string {
	if p.nameOf != nil {
		if name := p.nameOf(id); name != "" {
			return name
		}
	}
	return id
}

// clock is the time of day for today, else date and time, in local time.
func clock(t time.Time) string {
	now := time.Now()
	if y, m, d := t.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04:05")
}

// partsText renders a message's parts (SPEC §5), escaped by termsafe: text with its newlines
// and tabs, each line after the first indented so that none passes for a line of its own;
// data as its JSON on one line; an extension part by its kind.
func partsText(parts []wire.Part) string {
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		switch p.Kind {
		case wire.PartText:
			out = append(out, strings.ReplaceAll(termsafe.Text(p.Text), "\n", "\n    "))
		case wire.PartData:
			out = append(out, termsafe.String(string(p.Data)))
		default:
			out = append(out, "["+termsafe.String(p.Kind)+"]")
		}
	}
	return strings.Join(out, " ")
}

// row writes one table row to tw, each cell escaped by termsafe: a cell can hold what a peer
// chose (a name, an activity, a description), and a tab or newline in it would also shift the
// columns or forge a row.
func row(tw io.Writer, cells ...string) {
	for i, c := range cells {
		if i > 0 {
			_, _ = io.WriteString(tw, "\t")
		}
		_, _ = io.WriteString(tw, termsafe.String(c))
	}
	_, _ = io.WriteString(tw, "\n")
}

// ago is a short relative time for tables.
func ago(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := time.Since(t).Round(time.Second)
	switch {
	case d < time.Second:
		return "now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return t.Format("2006-01-02")
}

// senderNames shows a sender by endpoint.SenderName: its minted name beside the claimed one
// when they differ. Each lookup is bounded, so a mesh that does not answer only costs the
// check, never the line.
func senderNames(ctx context.Context, e *endpoint.Endpoint) func(wire.EndpointRef) string {
	return func(ref wire.EndpointRef) string {
		ctx, cancel := context.WithTimeout(ctx, senderLookupWait)
		defer cancel()
		return e.SenderName(ctx, ref)
	}
}

// senderLookupWait bounds one minted-name lookup for a printed line.
const senderLookupWait = 2 * time.Second

// rosterName is the display name of an instance id in e's roster, empty when unknown.
func rosterName(e *endpoint.Endpoint) func(id string) string {
	return func(id string) string {
		if peer, ok := e.Roster().Peer(id); ok {
			return peer.Presence.Card.Name
		}
		return ""
	}
}

// withArticle puts "a" or "an" before word, by its first letter: "an observer", "a service".
func withArticle(word string) string {
	if word != "" && strings.ContainsRune("aeiouAEIOU", rune(word[0])) {
		return "an " + word
	}
	return "a " + word
}
