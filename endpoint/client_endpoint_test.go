package endpoint_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
	"go.uber.org/goleak"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// userCreds mints .creds content for a user named name with tags, signed by a throwaway
// account: enough for the client to read its identity (SPEC §2).
func userCreds(t *testing.T, name string, tags ...string) (id string, creds []byte) {
	t.Helper()
	account, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	id, err = user.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	claims := jwt.NewUserClaims(id)
	claims.Name = name
	claims.Tags.Add(tags...)
	token, err := claims.Encode(account)
	if err != nil {
		t.Fatal(err)
	}
	seed, err := user.Seed()
	if err != nil {
		t.Fatal(err)
	}
	creds, err = jwt.FormatUserConfig(token, seed)
	if err != nil {
		t.Fatal(err)
	}
	return id, creds
}

func TestEndpointAdoptsTheCredentialsIdentity(t *testing.T) {
	h := newHarness(t)
	id, creds := userCreds(t, "alice", "cotal-role:reviewer", "cotal-profile:agent")
	path := filepath.Join(t.TempDir(), "alice.creds")
	if err := os.WriteFile(path, creds, 0o600); err != nil {
		t.Fatal(err)
	}
	h.provisionInstance(id, "reviewer")
	for _, tt := range []struct {
		name string
		opts endpoint.Options
	}{
		{"from .creds content", endpoint.Options{Creds: creds}},
		{"from a .creds file", endpoint.Options{CredsFile: path}},
		{"with a matching explicit id", endpoint.Options{Creds: creds, ID: id}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.InProcess, tt.opts.Space = h.provider, h.space
			e, err := endpoint.Connect(ctxT(t), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close(context.Background())
			if e.ID() != id || e.Name() != "alice" || e.Card().Role != "reviewer" || e.Card().ID != id {
				t.Fatalf("identity %s/%s/%s, want %s/alice/reviewer", e.ID(), e.Name(), e.Card().Role, id)
			}
		})
	}
}

func TestEndpointExplicitIDMismatchFailsBeforeAnyPublish(t *testing.T) {
	h := newHarness(t)
	id, creds := userCreds(t, "alice")
	other := newID(t)
	_, err := endpoint.Connect(ctxT(t), endpoint.Options{InProcess: h.provider, Space: h.space, Creds: creds, ID: other})
	if !errors.Is(err, endpoint.ErrIDMismatch) {
		t.Fatalf("connect: %v, want ErrIDMismatch", err)
	}
	kv := h.kv(h.names.PresenceBucket())
	for _, key := range []string{id, other} {
		if _, err := kv.Get(ctxT(t), key); err == nil {
			t.Fatalf("presence was written under %s", key)
		}
	}
}

func TestEndpointOptionsAreValidated(t *testing.T) {
	h := newHarness(t)
	_, creds := userCreds(t, "alice")
	_, other := userCreds(t, "mallory")
	// The JWT block of one credential with the seed block of another.
	jwtEnd := strings.Index(string(creds), "------END NATS USER JWT------")
	seedStart := strings.Index(string(other), "************************* IMPORTANT")
	mixed := append([]byte(string(creds[:jwtEnd])+"------END NATS USER JWT------\n\n"), other[seedStart:]...)
	tests := []struct {
		name string
		opts endpoint.Options
		want error
	}{
		{"no transport", endpoint.Options{Space: "main"}, endpoint.ErrInvalidOptions},
		{"both transports", endpoint.Options{InProcess: h.provider, Space: "main", Link: "cotal://localhost/main"}, endpoint.ErrInvalidOptions},
		{"in-process without a space", endpoint.Options{InProcess: h.srv}, endpoint.ErrInvalidOptions},
		{"two credential sources", endpoint.Options{InProcess: h.provider, Space: "main", Creds: creds, CredsFile: "x.creds"}, endpoint.ErrInvalidOptions},
		{"unbounded reconnects", endpoint.Options{InProcess: h.provider, Space: "main", MaxReconnects: -1}, endpoint.ErrInvalidOptions},
		{"a wildcard boot channel", endpoint.Options{InProcess: h.provider, Space: "main", Channels: []string{"team.*"}}, endpoint.ErrInvalidOptions},
		{"a credential that is not one", endpoint.Options{InProcess: h.provider, Space: "main", Creds: []byte("nope")}, endpoint.ErrBadCredential},
		{"a seed that is not the JWT subject's", endpoint.Options{InProcess: h.provider, Space: "main", Creds: mixed}, endpoint.ErrBadCredential},
		{"a link with a token and a credential", endpoint.Options{Link: "cotal://secret@localhost/main", Creds: creds}, endpoint.ErrInvalidOptions},
		{"a link for another space", endpoint.Options{Link: "cotal://localhost/main", Space: "other"}, endpoint.ErrInvalidOptions},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is refused", func(t *testing.T) {
			if _, err := endpoint.Connect(ctxT(t), tt.opts); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestEndpointReportsACredentialTooLargeForTheControlLine(t *testing.T) {
	h := newBareHarness(t, func(o *server.Options) {
		o.DontListen, o.Host, o.Port, o.MaxControlLine = false, "127.0.0.1", -1, 1024
	})
	var tags []string
	for i := range 40 {
		tags = append(tags, fmt.Sprintf("grant-%02d-cotal.main.chat.*.team.channel-%02d", i, i))
	}
	_, creds := userCreds(t, "alice", tags...)
	link := fmt.Sprintf("cotal://%s/%s", h.srv.Addr(), h.space)
	_, err := endpoint.Connect(ctxT(t), endpoint.Options{Link: link, Creds: creds})
	if !errors.Is(err, endpoint.ErrControlLine) || !strings.Contains(err.Error(), "max_control_line") {
		t.Fatalf("connect: %v, want ErrControlLine naming max_control_line", err)
	}
}

func TestEndpointConnectsThroughAJoinLinkWithACredsFile(t *testing.T) {
	m := spacetest.New(t, func(o *space.Options) { o.Listen = "127.0.0.1:0" })
	team := []string{"team"}
	alice := meshAgent(t, m, admin.MintSpec{Name: "alice", AllowSubscribe: team, AllowPublish: team})
	cred, err := admin.Mint(ctxT(t), m, admin.MintSpec{Space: "main", Name: "bob", Profile: "agent",
		AllowSubscribe: team, NoExpiry: true})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "bob.creds")
	if err := os.WriteFile(path, cred.Creds, 0o600); err != nil {
		t.Fatal(err)
	}
	link, err := m.Link("main")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan endpoint.Delivery, 1)
	bob, err := endpoint.Connect(ctxT(t), endpoint.Options{Link: link + "?channel=team", CredsFile: path,
		Handler: func(_ context.Context, d endpoint.Delivery) error { got <- d; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close(context.Background())
	if joined := bob.Joined(); bob.ID() != cred.ID || len(joined) != 1 || joined[0] != "team" {
		t.Fatalf("connected as %s joined to %v, want %s joined to the link's channel team", bob.ID(), joined, cred.ID)
	}
	r, err := alice.Send(ctxT(t), "team", text("over tcp"))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-got:
		if d.Message.ID != r.ID {
			t.Fatalf("got %s, want %s", d.Message.ID, r.ID)
		}
	case <-ctxT(t).Done():
		t.Fatal("bob got nothing over the link")
	}
}

func TestEndpointReportsABindOnlyConsumerThatDoesNotExist(t *testing.T) {
	h := newHarness(t)
	var missing atomic.Int32
	e, err := endpoint.Connect(ctxT(t), endpoint.Options{InProcess: h.provider, Space: h.space, Role: "ghost",
		OnEvent: func(ev endpoint.Event) {
			if ev.Kind == endpoint.EventConsumerMissing {
				missing.Add(1)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	await.True(t, settle, "dm_, dlv_ and svc_ reported missing", func() bool { return missing.Load() == 3 })
	for _, name := range []string{h.names.DMConsumer(e.ID()), h.names.DLVConsumer(e.ID()), h.names.SvcConsumer("ghost")} {
		for _, stream := range []string{h.names.DMStream(), h.names.DLVStream(), h.names.TaskStream()} {
			if _, err := h.js.Consumer(ctxT(t), stream, name); err == nil {
				t.Fatalf("the endpoint created %s on %s; agents bind only", name, stream)
			}
		}
	}
}

func TestEndpointRestoresEverythingAfterAReconnect(t *testing.T) {
	h := newHarness(t)
	alice := h.connect("alice")
	var reconnected = make(chan struct{}, 1)
	bob := h.connect("bob", func(o *endpoint.Options) {
		o.Channels = []string{"team"}
		o.Role = "reviewer"
		o.ReconnectWait = 50 * time.Millisecond
		o.OnEvent = func(ev endpoint.Event) {
			if ev.Kind == endpoint.EventReconnected {
				select {
				case reconnected <- struct{}{}:
				default:
				}
			}
		}
	})
	// Tasks handled at once give bob a pace, so the disconnect finds a pull ahead open.
	before := sendTasks(t, alice, "reviewer", "before", 3)
	await.True(t, settle, "the tasks before the reconnect", func() bool {
		return len(bob.rec.withID(before[len(before)-1])) == 1
	})
	cid, err := endpoint.Conn(bob.Endpoint).GetClientID()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.srv.DisconnectClientByID(cid); err != nil {
		t.Fatal(err)
	}
	select {
	case <-reconnected:
	case <-ctxT(t).Done():
		t.Fatal("bob did not reconnect")
	}
	// Live copies are at-most-once (SPEC §4): one published before the server has processed
	// bob's re-sent SUB is rightly lost. The flush round-trip orders after those SUBs.
	if err := endpoint.Conn(bob.Endpoint).FlushTimeout(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	dm, err := alice.SendDM(ctxT(t), bob.ID(), text("after reconnect"))
	if err != nil {
		t.Fatal(err)
	}
	live, err := alice.Send(ctxT(t), "team", text("after reconnect"))
	if err != nil {
		t.Fatal(err)
	}
	task, err := alice.SendAnycast(ctxT(t), "reviewer", text("after reconnect"))
	if err != nil {
		t.Fatal(err)
	}
	await.True(t, settle, "the DM, the channel message and the task", func() bool {
		return len(bob.rec.withID(dm.ID)) == 1 && len(bob.rec.withID(live.ID)) == 1 &&
			len(bob.rec.withID(task.ID)) == 1
	})
	if err := alice.SetStatus(ctxT(t), wire.StatusWorking, "post-reconnect"); err != nil {
		t.Fatal(err)
	}
	await.True(t, settle, "the roster to follow", func() bool {
		p, _ := bob.Roster().Peer(alice.ID())
		return p.Presence.Activity == "post-reconnect"
	})
}

func TestEndpointCloseLeavesNoGoroutineBehind(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Run("a session", func(t *testing.T) {
		h := newHarness(t)
		alice := h.connect("alice", func(o *endpoint.Options) { o.Role = "planner"; o.Channels = []string{"team"} })
		bob := h.connect("bob", func(o *endpoint.Options) { o.Channels = []string{"team"} })
		events, cancel := bob.Roster().Subscribe()
		defer cancel()
		if _, err := alice.Send(ctxT(t), "team", text("hi")); err != nil {
			t.Fatal(err)
		}
		if _, err := bob.SendDM(ctxT(t), alice.ID(), text("hi")); err != nil {
			t.Fatal(err)
		}
		await.True(t, settle, "both deliveries", func() bool { return len(alice.rec.all()) == 1 && len(bob.rec.all()) == 1 })
		if err := bob.Close(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		for range events {
		}
		if err := bob.Close(ctxT(t)); err != nil {
			t.Fatalf("second close: %v", err)
		}
	})
	goleak.VerifyNone(t, ignore)
}

func TestEndpointReconnectsForeverOnlyWhenAsked(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		name string
		opts func(*endpoint.Options)
		want int // the connection's reconnect limit; -1 is none
	}{
		{"by default reconnects are bounded by DefaultMaxReconnects", func(*endpoint.Options) {}, endpoint.DefaultMaxReconnects},
		{"MaxReconnects sets the bound", func(o *endpoint.Options) { o.MaxReconnects = 3 }, 3},
		{"ReconnectForever lifts the bound", func(o *endpoint.Options) { o.MaxReconnects, o.ReconnectForever = 3, true }, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := h.connect("alice", tc.opts)
			if got := endpoint.Conn(e.Endpoint).Opts.MaxReconnect; got != tc.want {
				t.Errorf("the connection's MaxReconnects is %d, want %d", got, tc.want)
			}
		})
	}
}
