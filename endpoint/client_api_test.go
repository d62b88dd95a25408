package endpoint_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/space/spacetest"
)

// warnings is a slog.Handler that keeps the records at WARN and above.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler           { return w }
func (w *warnings) WithGroup(string) slog.Handler                { return w }

func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, r.Message)
	return nil
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

func TestACleanCloseLogsNoWarning(t *testing.T) {
	h := newHarness(t)
	logged := &warnings{}
	p := h.connect("alice", func(o *endpoint.Options) { o.Logger = slog.New(logged) })
	if _, err := p.Send(ctxT(t), "general", text("hello")); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if got := logged.all(); len(got) != 0 {
		t.Errorf("a clean Close logged at WARN or above: %q", got)
	}
}

func TestConnectReturnsWithTheBoundConsumersConsuming(t *testing.T) {
	h := newHarness(t)
	alice := h.connect("alice", func(o *endpoint.Options) { o.Role = "reviewer" })
	backlog, err := alice.Backlog(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{h.names.DMConsumer(alice.ID()), h.names.DLVConsumer(alice.ID()), h.names.SvcConsumer("reviewer")}
	if len(backlog) != len(want) {
		t.Fatalf("backlog %+v, want one row for each of %v", backlog, want)
	}
	for i, b := range backlog {
		if b.Consumer != want[i] || !b.Bound || b.Missing {
			t.Errorf("row %d is %+v, want %s bound as Connect returns", i, b, want[i])
		}
	}
}

func TestConnectDoesNotWaitForAConsumerTheMeshHasNotCreated(t *testing.T) {
	h := newHarness(t)
	events := make(chan endpoint.Event, 16)
	e, err := endpoint.Connect(ctxT(t), endpoint.Options{InProcess: h.provider, Space: h.space, ID: newID(t),
		OnEvent: func(ev endpoint.Event) {
			select {
			case events <- ev:
			default:
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	backlog, err := e.Backlog(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range backlog {
		if b.Bound || !b.Missing {
			t.Errorf("%+v, want %s missing and unbound", b, b.Consumer)
		}
	}
	missing := 0
	for len(events) > 0 {
		if ev := <-events; ev.Kind == endpoint.EventConsumerMissing {
			missing++
		}
	}
	if missing != len(backlog) {
		t.Errorf("%d consumer-missing events before Connect returned, want %d", missing, len(backlog))
	}
}

func TestBacklogCountsWhatTheDMConsumerStillOwes(t *testing.T) {
	h := newHarness(t)
	release := make(chan struct{})
	bob := h.connect("bob", func(o *endpoint.Options) {
		o.Handler = func(ctx context.Context, _ endpoint.Delivery) error {
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	})
	alice := h.connect("alice")
	for i := range 3 {
		if _, err := alice.SendDM(ctxT(t), bob.ID(), text(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	owed := func() uint64 {
		backlog, err := bob.Backlog(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		dm := backlog[0]
		if dm.Kind != endpoint.MetaDM {
			t.Fatalf("first backlog row %+v, want dm_", dm)
		}
		return dm.Waiting + uint64(dm.InFlight)
	}
	await.True(t, settle, "bob's dm_ to owe the three DMs", func() bool { return owed() == 3 })
	close(release)
	await.True(t, settle, "bob's dm_ to owe nothing once handled", func() bool { return owed() == 0 })
}

func TestConnectJoinsTheCredentialsBootChannels(t *testing.T) {
	m := spacetest.New(t)
	for i, tc := range []struct {
		name      string
		configure func(*endpoint.Options)
		want      []string
	}{
		{"by default, the --subscribe channels and not the rest of the read ACL", nil, []string{"general", "team.b"}},
		{"after Options.Channels", func(o *endpoint.Options) { o.Channels = []string{"ops"} }, []string{"general", "ops", "team.b"}},
		{"none with SkipCredentialChannels", func(o *endpoint.Options) { o.SkipCredentialChannels = true }, nil},
		{"none when passive", func(o *endpoint.Options) { o.Passive = true }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var configure []func(*endpoint.Options)
			if tc.configure != nil {
				configure = append(configure, tc.configure)
			}
			spec := admin.MintSpec{Name: fmt.Sprintf("alice%d", i), Subscribe: []string{"team.b", "general"},
				AllowSubscribe: []string{"general", "ops", "team.>"}}
			p := meshAgent(t, m, spec, configure...)
			if got := p.Joined(); !slices.Equal(got, tc.want) {
				t.Errorf("joined %v as Connect returns, want %v", got, tc.want)
			}
		})
	}
}

func TestStatsAllocatesNothing(t *testing.T) {
	h := newHarness(t)
	p := h.connect("alice")
	var st endpoint.Stats
	if n := testing.AllocsPerRun(100, func() { st = p.Stats() }); n != 0 {
		t.Errorf("Stats allocates %v times per call, want 0", n)
	}
	_ = st
}
