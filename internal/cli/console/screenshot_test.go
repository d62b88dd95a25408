package console_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

// TestScreenshot writes the picture of the console in docs/console.md (docs/console.png) when
// COTAL_CONSOLE_SCREENSHOT names the file: three agents talk for about forty seconds, so the
// plots have a few minutes' worth of shape, and a full-page screenshot is taken. It is a
// generator, not a check, so without the variable it does nothing.
func TestScreenshot(t *testing.T) {
	out := os.Getenv("COTAL_CONSOLE_SCREENSHOT")
	if out == "" {
		t.Skip("set COTAL_CONSOLE_SCREENSHOT=docs/console.png to regenerate the screenshot")
	}
	f := newFixture(t)
	carol := f.agent(t, "carol", "reviewer")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	agents := map[string]*endpoint.Endpoint{"alice": f.alice, "bob": f.bob, "carol": carol}
	if err := f.alice.SetStatus(ctx, wire.StatusWorking, "drafting the release notes"); err != nil {
		t.Fatal(err)
	}
	if err := carol.SetStatus(ctx, wire.StatusWaiting, "waiting for review requests"); err != nil {
		t.Fatal(err)
	}
	purpose := "release work and reviews"
	if _, err := f.m.SetChannel(ctx, "main", space.ChannelUpdate{Channel: "general", Description: &purpose, Create: true}); err != nil {
		t.Fatal(err)
	}
	talk := []struct{ who, text string }{
		{"alice", "release 0.4 is cut; notes next"}, {"bob", "CI is green on main"},
		{"carol", "I can review the notes when they are up"}, {"alice", "notes are up for review"},
		{"bob", "benchmarks rerun, numbers in BENCHMARKS.md"}, {"carol", "two nits, otherwise fine"},
		{"alice", "fixed both, pushing now"}, {"bob", "the cluster test is flaky again, looking"},
		{"carol", "approved"}, {"alice", "merging the notes"}, {"bob", "found it: a port clash, fixed"},
		{"carol", "next review?"}, {"alice", "the console screenshot, after lunch"},
		{"bob", "tagging 0.4.1 once CI passes"},
	}
	b := browser(t)
	if err := chromedp.Do(b, chromedp.EmulateViewport(1280, 1000), chromedp.Navigate(f.con.URL(f.base))); err != nil {
		t.Fatal(err)
	}
	// The talk is paced by a ticker; nothing waits on it.
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(40 * time.Second)
	// A varying number of lines per tick gives the rate plot its shape; each line is said once
	// per round of the talk, so the feed reads as a conversation, not as repeats.
	next := 0
	for i := 0; time.Now().Before(deadline); i++ {
		<-tick.C
		for range 1 + i%3 {
			line := talk[next%len(talk)]
			next++
			f.send(t, agents[line.who], line.text)
		}
	}
	dmCtx, cancelDM := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelDM()
	if _, err := f.alice.SendDM(dmCtx, carol.ID(), partsOf("can you take the notes review?")); err != nil {
		t.Fatal(err)
	}
	until(t, b, 10*time.Second, "the DM in the feed", `document.querySelector("#feed-list li.kind-dm") !== null`)
	eval(t, b, `(() => { const h = document.querySelector(".history-form select"); h.value = "general"; h.dispatchEvent(new Event("change", {bubbles: true})); })()`)
	until(t, b, 10*time.Second, "the history", `document.querySelectorAll('[data-view="history"] li').length > 3`)
	png, err := chromedp.Run(b, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	fmt.Println("wrote", out)
}
