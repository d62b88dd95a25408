package console

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
)

// ErrBadPage means a list view was asked for a window it cannot show: a first row or a page
// size that is no number, or a size past maxPageSize.
var ErrBadPage = errors.New("invalid page of a list")

// pageSize is how many rows a list view shows unless the request asks for fewer or more;
// maxPageSize bounds what it may ask for, so no view renders an unbounded list however
// many channels, agents or credentials the space has.
const pageSize, maxPageSize = 100, 500

// pager is the window of a list view one request shows: rows [From, To) of Total, with the
// links to the neighbouring windows (nil when there is none).
type pager struct {
	View            string
	From, To, Total int
	Prev, Next      *pageLink
}

// pageLink is a neighbouring window: Href reloads the whole page there (without script),
// Params is the query the script reloads the one view with.
type pageLink struct {
	Href   template.URL
	Params string
}

// First is the 1-based number of the first row shown, as the page says it.
func (p pager) First() int { return min(p.From+1, p.To) }

// pageOf reads the window of view from r's query, "VIEW.from" (the first row, default 0)
// and "VIEW.size" (default pageSize, at most maxPageSize), for a list of total rows. A first
// row past the end shows the last window. Each view has its own keys, so paging one list of
// the whole page leaves the others where they are.
func pageOf(r *http.Request, view string, total int) (pager, error) {
	from, err := queryInt(r, view+".from", 0)
	if err != nil {
		return pager{}, err
	}
	size, err := queryInt(r, view+".size", pageSize)
	if err != nil {
		return pager{}, err
	}
	if size < 1 || size > maxPageSize {
		return pager{}, fmt.Errorf("%w: %s.size=%d, want 1 to %d", ErrBadPage, view, size, maxPageSize)
	}
	if from >= total {
		from = max(total-1, 0) / size * size
	}
	p := pager{View: view, From: from, To: min(from+size, total), Total: total}
	if from > 0 {
		p.Prev = link(r, view, max(from-size, 0), size)
	}
	if p.To < total {
		p.Next = link(r, view, p.To, size)
	}
	return p, nil
}

// queryInt is the non-negative whole number r's query holds under key, def without one.
func queryInt(r *http.Request, key string, def int) (int, error) {
	v := r.URL.Query().Get(key)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: %s=%q, want a whole number from 0 up", ErrBadPage, key, v)
	}
	return n, nil
}

// link is the window of view from row from on: for the whole page, r's query with the window
// moved (every other view stays where it is); for the script, the view's own keys alone.
func link(r *http.Request, view string, from, size int) *pageLink {
	q := r.URL.Query()
	q.Set(view+".from", strconv.Itoa(from))
	q.Del(view + ".size")
	if size != pageSize {
		q.Set(view+".size", strconv.Itoa(size))
	}
	own := url.Values{}
	for _, k := range []string{view + ".from", view + ".size"} {
		if v, ok := q[k]; ok {
			own[k] = v
		}
	}
	return &pageLink{Href: template.URL("?" + q.Encode()), Params: own.Encode()}
}
