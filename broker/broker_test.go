package broker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
)

func TestStartWithoutListenerAcceptsInProcessUsers(t *testing.T) {
	tt := newTestTrust(t)
	b := startBroker(t, operatorConfig(tt))

	if got := b.ClientURL(); got != "" {
		t.Errorf("ClientURL without a listener = %q, want \"\"", got)
	}
	if err := b.Healthy(); err != nil {
		t.Errorf("Healthy: %v", err)
	}
	roundTrip(t, connect(t, b, tt.user(t, "alice").option()))
}

func TestStartWithListenerReportsTheBoundPort(t *testing.T) {
	tt := newTestTrust(t)
	cfg := operatorConfig(tt)
	cfg.Listen = "127.0.0.1:0"
	b := startBroker(t, cfg)

	u := b.ClientURL()
	if !strings.HasPrefix(u, "nats://127.0.0.1:") || strings.HasSuffix(u, ":0") || strings.HasSuffix(u, ":-1") {
		t.Fatalf("ClientURL = %q, want nats://127.0.0.1:<bound port>", u)
	}
	nc, err := nats.Connect(u, tt.user(t, "alice").option())
	if err != nil {
		t.Fatalf("TCP connect to %s: %v", u, err)
	}
	defer nc.Close()
	roundTrip(t, nc)
}

func TestWrongCredentialsAreRefused(t *testing.T) {
	tt := newTestTrust(t)
	b := startBroker(t, operatorConfig(tt))
	alice, bob := tt.user(t, "alice"), tt.user(t, "bob")
	strangerPub, strangerSigner, _ := newAppAccount(t)

	tests := []struct {
		name string
		opt  nats.Option
	}{
		{"a client without credentials is refused", nil},
		{"a JWT presented with another user's seed is refused", nats.UserJWTAndSeed(alice.jwt, string(bob.seed))},
		{"a user signed by a key the account does not list is refused",
			mintUser(t, tt.appPub, newKey(t, nkeys.CreateAccount), "mallory", nil).option()},
		{"a user of an account the broker does not know is refused",
			mintUser(t, strangerPub, strangerSigner, "stranger", nil).option()},
		{"an expired user is refused",
			mintUser(t, tt.appPub, tt.appSigner, "late", func(uc *jwt.UserClaims) {
				uc.Expires = time.Now().Add(-time.Minute).Unix()
			}).option()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { refused(t, b, tc.opt) })
	}
}

func TestJetStreamWorksForTheAccount(t *testing.T) {
	tt := newTestTrust(t)
	cfg := operatorConfig(tt)
	cfg.Memory, cfg.StoreDir = false, t.TempDir()
	b := startBroker(t, cfg)
	js := jetStream(t, connect(t, b, tt.user(t, "alice").option()))

	createStream(t, js, "ORDERS", jetstream.FileStorage)
	publish(t, js, "orders.new", "one", "two")
	if got := readAll(t, js, "ORDERS"); strings.Join(got, ",") != "one,two" {
		t.Errorf("stream holds %q, want [one two]", got)
	}
}

func TestAnAccountWithoutJetStreamLimitsHasNoJetStream(t *testing.T) {
	tt := newTestTrust(t)
	tt.appClaims.Limits.JetStreamLimits = jwt.JetStreamLimits{}
	tt.appJWT = encode(t, tt.appClaims, tt.operatorSigner)
	logs := &recorder{}
	cfg := operatorConfig(tt)
	cfg.Logger = logs.logger()
	b := startBroker(t, cfg)
	js := jetStream(t, connect(t, b, tt.user(t, "alice").option()))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	if err == nil {
		t.Fatal("CreateStream succeeded in an account without JetStream limits")
	}
	if !logs.has(levelWarn, "no JetStream limits") {
		t.Errorf("no warning about the missing JetStream limits; log: %v", logs.lines())
	}
}

func TestRestartOnTheSameStoreKeepsStreams(t *testing.T) {
	tt := newTestTrust(t)
	cfg := operatorConfig(tt)
	cfg.Memory, cfg.StoreDir = false, t.TempDir()
	alice := tt.user(t, "alice")

	first, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("first Start: %v", err)
	}
	nc, err := nats.Connect("", nats.InProcessServer(first.InProcess()), alice.option())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	js := jetStream(t, nc)
	createStream(t, js, "ORDERS", jetstream.FileStorage)
	publish(t, js, "orders.new", "kept-1", "kept-2", "kept-3")
	nc.Close()
	shutdown(t, first)

	second := startBroker(t, cfg)
	got := readAll(t, jetStream(t, connect(t, second, alice.option())), "ORDERS")
	if strings.Join(got, ",") != "kept-1,kept-2,kept-3" {
		t.Errorf("after restart the stream holds %q, want the three messages published before", got)
	}
}

func TestAStoreInUseIsRefusedUntilReleased(t *testing.T) {
	tt := newTestTrust(t)
	cfg := operatorConfig(tt)
	cfg.Memory, cfg.StoreDir = false, t.TempDir()

	first, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("first Start: %v", err)
	}
	if second, err := Start(context.Background(), cfg); !errors.Is(err, ErrStoreLocked) {
		if second != nil {
			shutdown(t, second)
		}
		t.Fatalf("second Start on a store in use: err = %v, want ErrStoreLocked", err)
	}
	if err := first.Healthy(); err != nil {
		t.Errorf("the first broker is unhealthy after the refused start: %v", err)
	}
	shutdown(t, first)
	startBroker(t, cfg)
}

func TestOpenModeNeedsNoCredentials(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Memory, cfg.Open = true, true
	cfg.Logger = operatorConfig(newTestTrust(t)).Logger
	b := startBroker(t, cfg)
	nc := connect(t, b)
	roundTrip(t, nc)

	js := jetStream(t, nc)
	createStream(t, js, "DEV", jetstream.MemoryStorage)
	publish(t, js, "dev.x", "hello")
	if got := readAll(t, js, "DEV"); len(got) != 1 {
		t.Errorf("open-mode stream holds %q, want one message", got)
	}
	if err := b.UpdateAccount(newTestTrust(t).appJWT); !errors.Is(err, ErrOpenMode) {
		t.Errorf("UpdateAccount in open mode: err = %v, want ErrOpenMode", err)
	}
}

func TestCredentialsLargerThanTheDefaultControlLineConnect(t *testing.T) {
	tt := newTestTrust(t)
	b := startBroker(t, operatorConfig(tt))
	user := mintUser(t, tt.appPub, tt.appSigner, "many-grants", func(uc *jwt.UserClaims) {
		for i := range 200 {
			uc.Sub.Allow.Add(fmt.Sprintf("cotal.space.chat.*.channel-with-a-long-name-%03d", i))
		}
		uc.Pub.Allow.Add("probe.>")
		uc.Sub.Allow.Add("probe.>")
	})
	if len(user.jwt) <= 4096 {
		t.Fatalf("test credential is %d bytes; it must exceed the 4 KiB default control line", len(user.jwt))
	}
	roundTrip(t, connect(t, b, user.option()))
}

func TestMonitoringServesHealthz(t *testing.T) {
	cfg := operatorConfig(newTestTrust(t))
	cfg.HTTP = "127.0.0.1:0"
	b := startBroker(t, cfg)

	u := b.MonitorURL()
	if !strings.HasPrefix(u, "http://127.0.0.1:") {
		t.Fatalf("MonitorURL = %q, want http://127.0.0.1:<bound port>", u)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(u + "/healthz?js-enabled-only=true")
	if err != nil {
		t.Fatalf("GET /healthz: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz status = %d, want 200", resp.StatusCode)
	}
}

func TestShutdown(t *testing.T) {
	tt := newTestTrust(t)
	b, err := Start(context.Background(), operatorConfig(tt))
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	disconnected := make(chan struct{})
	nc := connect(t, b, tt.user(t, "alice").option(), nats.DisconnectErrHandler(func(*nats.Conn, error) { close(disconnected) }))
	tempStore := b.store.dir

	t.Run("it disconnects clients and releases a memory mesh's store", func(t *testing.T) {
		shutdown(t, b)
		select {
		case <-disconnected:
		case <-time.After(30 * time.Second):
			t.Fatalf("client still connected after Shutdown: status %v", nc.Status())
		}
		if _, err := os.Stat(tempStore); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("temporary store %s still exists after Shutdown (stat: %v)", tempStore, err)
		}
	})
	t.Run("a second call returns at once without error", func(t *testing.T) {
		if err := b.Shutdown(context.Background()); err != nil {
			t.Errorf("second Shutdown: %v", err)
		}
	})
	t.Run("the stopped broker reports it is closed", func(t *testing.T) {
		if err := b.Healthy(); !errors.Is(err, ErrClosed) {
			t.Errorf("Healthy = %v, want ErrClosed", err)
		}
		if _, err := b.InProcess().InProcessConn(); !errors.Is(err, ErrClosed) {
			t.Errorf("InProcessConn = %v, want ErrClosed", err)
		}
		if err := b.UpdateAccount(tt.appJWT); !errors.Is(err, ErrClosed) {
			t.Errorf("UpdateAccount = %v, want ErrClosed", err)
		}
	})
}

func TestShutdownWithAnExpiredContextStillStops(t *testing.T) {
	b, err := Start(context.Background(), operatorConfig(newTestTrust(t)))
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown with a cancelled context: %v, want nil or context.Canceled", err)
	}
	shutdown(t, b)
	if b.Server().Running() {
		t.Error("server still running after Shutdown returned")
	}
}

func TestStartWithACancelledContextStartsNothing(t *testing.T) {
	cfg := operatorConfig(newTestTrust(t))
	cfg.Memory, cfg.StoreDir = false, t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if b, err := Start(ctx, cfg); !errors.Is(err, context.Canceled) {
		if b != nil {
			shutdown(t, b)
		}
		t.Fatalf("Start with a cancelled context: err = %v, want context.Canceled", err)
	}
	startBroker(t, cfg) // the store was not left locked
}
