package console_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/cli/console"
)

// BenchmarkViewChannels renders the channels view of a space with n channels, one live
// message each, after ten minutes' worth of plot samples: what an open page asks for every
// tick.
func BenchmarkViewChannels(b *testing.B) {
	for _, n := range []int{250, 2000} {
		b.Run(fmt.Sprintf("%d channels", n), func(b *testing.B) {
			f := newFixture(b)
			f.channels(b, n)
			await.True(b, time.Minute, "the console to hear every channel", func() bool { return f.con.ChannelsHeard() >= n })
			f.con.Sample(console.SamplesKept)
			for b.Loop() {
				if code, body, _ := f.do(b, request{method: http.MethodGet, path: "/view/channels", auth: "session"}); code != http.StatusOK {
					b.Fatalf("status %d: %s", code, body)
				}
			}
		})
	}
}
