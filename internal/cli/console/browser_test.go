package console_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumPath is Debian's chromium; CI installs it (.ci/run) so these tests always run.
const chromiumPath = "/usr/bin/chromium"

// browser starts a headless Chromium with a fresh profile and the flags that keep it off
// the network (no updates, sync, QUIC or background fetches), closed at cleanup.
func browser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("the browser tests need Chromium at %s: install it with `apt-get install -y chromium` (.ci/run does): %v", chromiumPath, err)
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true))
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	return ctx
}

// until polls the page's predicate js for up to limit and fails the test naming what.
func until(t *testing.T, ctx context.Context, limit time.Duration, what, js string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		t.Fatalf("%s: not within %s: %v", what, limit, err)
	}
}

// eval runs js on the page.
func eval(t *testing.T, ctx context.Context, js string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](js)); err != nil {
		t.Fatalf("%s: %v", js, err)
	}
}

// cell is a predicate: the text of the first element matching sel equals want.
func cell(sel, want string) string {
	return fmt.Sprintf(`(document.querySelector(%s)?.textContent ?? "").trim() === %s`, strconv.Quote(sel), strconv.Quote(want))
}

func TestTheConsoleInABrowser(t *testing.T) {
	start := time.Now()
	f := newFixture(t)
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(f.con.URL(f.base))); err != nil {
		t.Fatalf("open the console: %v", err)
	}

	t.Run("it shows two agents online", func(t *testing.T) {
		until(t, ctx, 10*time.Second, "alice idle", cell(`tr[data-name="alice"] .badge`, "idle"))
		until(t, ctx, 10*time.Second, "bob idle", cell(`tr[data-name="bob"] .badge`, "idle"))
	})

	t.Run("a message arrives in the live feed within a second", func(t *testing.T) {
		until(t, ctx, 10*time.Second, "the feed is live", cell("#live", "live"))
		sent := time.Now()
		f.send(t, f.alice, "ping from the browser test")
		until(t, ctx, time.Second, "the message in the feed",
			`[...document.querySelectorAll("#feed-list .text")].some(e => e.textContent === "ping from the browser test")`)
		t.Logf("shown %s after it was sent", time.Since(sent).Round(time.Millisecond))
	})

	t.Run("a channel's class is changed", func(t *testing.T) {
		until(t, ctx, 10*time.Second, "general is durable", cell(`tr[data-channel="general"] td.class`, "durable"))
		eval(t, ctx, `(() => {
			const f = document.querySelector('form[data-action="act/channel"]');
			f.elements.channel.value = "general"; f.elements.class.value = "live";
			f.requestSubmit(); })()`)
		until(t, ctx, 10*time.Second, "the form says done", cell(`form[data-action="act/channel"] .result`, "done"))
		until(t, ctx, 10*time.Second, "general is live", cell(`tr[data-channel="general"] td.class`, "live"))
	})

	t.Run("a credential is minted and revoked", func(t *testing.T) {
		eval(t, ctx, `(() => {
			const f = document.querySelector('form[data-action="act/mint"]');
			f.elements.name.value = "erin"; f.elements.subscribe.value = "general";
			f.requestSubmit(); })()`)
		until(t, ctx, 10*time.Second, "the mint is reported",
			`(document.querySelector('form[data-action="act/mint"] .result')?.textContent ?? "").includes("downloaded erin.creds")`)
		until(t, ctx, 10*time.Second, "erin is active", cell(`tr[data-name="erin"] .state`, "active"))
		eval(t, ctx, `document.querySelector('tr[data-name="erin"] form[data-action="act/revoke"]').requestSubmit()`)
		until(t, ctx, 10*time.Second, "erin is revoked", cell(`tr[data-name="erin"] .state`, "revoked"))
	})

	t.Run("the feed filters by kind", func(t *testing.T) {
		dmCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := f.bob.SendDM(dmCtx, f.alice.ID(), partsOf("a word in private")); err != nil {
			t.Fatal(err)
		}
		eval(t, ctx, `(() => { const k = document.querySelector('#feed-filter select[name="kind"]');
			k.value = "dm"; k.dispatchEvent(new Event("input", {bubbles: true})); })()`)
		until(t, ctx, 5*time.Second, "only the DM is listed",
			`(() => { const l = [...document.querySelectorAll("#feed-list li")];
				return l.length === 1 && l[0].textContent.includes("dm → alice") && l[0].textContent.includes("a word in private"); })()`)
	})

	t.Run("it reads on a narrow window", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(360, 740)); err != nil {
			t.Fatal(err)
		}
		until(t, ctx, 5*time.Second, "no sideways scrolling at 360 px",
			`document.documentElement.scrollWidth <= window.innerWidth`)
	})

	t.Run("a wrong token is refused", func(t *testing.T) {
		other := browser(t)
		if err := chromedp.Do(other, chromedp.Navigate(f.base+"/?token=wrong")); err != nil {
			t.Fatal(err)
		}
		until(t, other, 5*time.Second, "the refusal", `document.body.textContent.includes("wrong console token")`)
	})
	t.Logf("browser test took %s", time.Since(start).Round(time.Millisecond))
}

func TestTheConsoleShowsTheSpaceChosenInItsHeader(t *testing.T) {
	f := newFixture(t, "a", "b")
	carol := f.agentIn(t, "b", "carol", "reviewer")
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(f.con.URL(f.base))); err != nil {
		t.Fatalf("open the console: %v", err)
	}
	until(t, ctx, 10*time.Second, "alice in the first space", cell(`tr[data-name="alice"] .badge`, "idle"))
	eval(t, ctx, `(() => { const s = document.querySelector('#space-form select');
		s.value = "b"; s.dispatchEvent(new Event("change", {bubbles: true})); })()`)
	// The change loads the page of b; a query waits across the navigation, a poll would not.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := chromedp.Do(wctx, chromedp.WaitReady(`body[data-space="b"]`)); err != nil {
		t.Fatalf("the page of space b: %v", err)
	}
	until(t, ctx, 10*time.Second, "carol in space b", cell(`tr[data-name="carol"] .badge`, "idle"))
	until(t, ctx, 10*time.Second, "b's feed is live", cell("#live", "live"))
	f.send(t, carol, "said in space b")
	until(t, ctx, 5*time.Second, "b's message in the feed",
		`[...document.querySelectorAll("#feed-list .text")].some(e => e.textContent === "said in space b")`)
	until(t, ctx, 5*time.Second, "no agent of a", `document.querySelector('tr[data-name="alice"]') === null`)
}
