package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/cli/console"
)

// manyChannels is enough channels that a view doing work per channel pair, as one did, takes
// minutes; one page of them takes milliseconds.
const manyChannels = 3000

var (
	channelRow = regexp.MustCompile(`<tr data-channel="`)
	pageLine   = regexp.MustCompile(`channels (\d+)–(\d+) of (\d+)`)
)

func TestTheChannelsViewShowsOnePageOfMany(t *testing.T) {
	f := newFixture(t)
	f.channels(t, manyChannels)
	await.True(t, time.Minute, "the console to hear every channel", func() bool { return f.con.ChannelsHeard() >= manyChannels })
	f.con.Sample(console.SamplesKept) // ten minutes of plot samples, as on a console left open
	for _, tc := range []struct {
		name, query, first, last string
		rows                     int
		next                     string
	}{
		{"the first page holds the default page size and links to the next", "", "1", "100", 100, "channels.from=100"},
		{"the next page starts where the first ended", "?channels.from=100", "101", "200", 100, "channels.from=200"},
		{"a smaller page is as asked", "?channels.from=10&channels.size=5", "11", "15", 5, "channels.from=15&amp;channels.size=5"},
		{"a first row past the end shows the last page", "?channels.from=99999", "2901", "3000", 100, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, _ := f.do(t, request{method: http.MethodGet, path: "/view/channels" + tc.query, auth: "session"})
			if code != http.StatusOK {
				t.Fatalf("status %d: %.300s", code, body)
			}
			if n := len(channelRow.FindAllString(body, -1)); n != tc.rows {
				t.Errorf("%d rows, want %d", n, tc.rows)
			}
			m := pageLine.FindStringSubmatch(body)
			if m == nil || m[1] != tc.first || m[2] != tc.last || m[3] != fmt.Sprint(manyChannels) {
				t.Fatalf("page line %q, want channels %s–%s of %d", m, tc.first, tc.last, manyChannels)
			}
			if tc.next != "" && !strings.Contains(body, `data-params="`+tc.next+`"`) {
				t.Errorf("no next link to %s in %.2000s", tc.next, body)
			}
			if tc.next == "" && strings.Contains(body, ">next</a>") {
				t.Errorf("the last page links to a next one")
			}
		})
	}
	for _, q := range []string{"?channels.size=501", "?channels.size=0", "?channels.from=-1", "?channels.from=x"} {
		t.Run("a page of "+q+" is refused", func(t *testing.T) {
			if code, body, _ := f.do(t, request{method: http.MethodGet, path: "/view/channels" + q, auth: "session"}); code != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %.300s", code, body)
			}
		})
	}
	t.Run("the page, the plots and the history stay bounded", func(t *testing.T) {
		for path, most := range map[string]int{"/": 400 << 10, "/view/plots": 32 << 10, "/view/history": 32 << 10} {
			code, body, _ := f.do(t, request{method: http.MethodGet, path: path, auth: "session"})
			if code != http.StatusOK || len(body) > most {
				t.Errorf("%s: status %d, %d bytes, want 200 and at most %d", path, code, len(body), most)
			}
		}
	})
	t.Run("a view whose client has left returns", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		r := f.authed(t, httptest.NewRequestWithContext(ctx, http.MethodGet, f.base+"/view/channels", nil))
		done := make(chan struct{})
		go func() {
			defer close(done)
			f.con.ServeHTTP(httptest.NewRecorder(), r)
		}()
		cancel()
		await.True(t, 10*time.Second, "the channels view to return after its client left", func() bool {
			select {
			case <-done:
				return true
			default:
				return false
			}
		})
	})
}
