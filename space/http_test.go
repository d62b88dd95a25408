package space_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/delivery"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestHealthzTurnsRedWhileTheFanoutLoopIsDown(t *testing.T) {
	m := spacetest.New(t, func(o *space.Options) { o.HTTP = "127.0.0.1:0" })
	url := m.HTTPURL() + "/healthz"
	if code, body := get(t, url); code != http.StatusOK || !strings.Contains(body, `"status":"ok"`) {
		t.Fatalf("fresh mesh /healthz = %d %s", code, body)
	}
	svc, err := m.Delivery("main")
	if err != nil {
		t.Fatal(err)
	}
	release, err := svc.Interrupt(delivery.LoopFanout)
	if err != nil {
		t.Fatal(err)
	}
	var body string
	await.True(t, 10*time.Second, "/healthz to turn red", func() bool {
		var code int
		code, body = get(t, url)
		return code == http.StatusServiceUnavailable
	})
	var reply struct {
		Status     string
		Components map[string]string
	}
	if err := json.Unmarshal([]byte(body), &reply); err != nil {
		t.Fatal(err)
	}
	if reply.Status != "unavailable" || !strings.Contains(reply.Components["space main delivery"], "fanout") {
		t.Fatalf("red /healthz does not name the fanout loop: %s", body)
	}
	release()
	await.True(t, 30*time.Second, "/healthz to turn green after the supervisor restarts fanout", func() bool {
		code, _ := get(t, url)
		return code == http.StatusOK
	})
}

var channelCounter = regexp.MustCompile(`(?m)^cotal_messages_total\{kind="channel",space="main"\} (\d+)$`)

func TestMetricsMoveWhenMessagesFlow(t *testing.T) {
	m := spacetest.New(t, func(o *space.Options) { o.HTTP = "127.0.0.1:0" })
	count := func() int {
		_, body := get(t, m.HTTPURL()+"/metrics")
		match := channelCounter.FindStringSubmatch(body)
		if match == nil {
			t.Fatalf("/metrics has no channel message counter:\n%s", body)
		}
		n, _ := strconv.Atoi(match[1])
		return n
	}
	before := count()
	alice := mint(t, m, "alice", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}, AllowPublish: []string{"general"}})
	js, err := jetstream.New(connect(t, m, alice))
	if err != nil {
		t.Fatal(err)
	}
	n := wire.NewNames("main")
	for range 3 {
		msg := wire.NewChannelMessage("main", wire.EndpointRef{ID: alice.ID, Name: "alice"}, "general", wire.TextPart("hi"))
		data, _ := json.Marshal(msg)
		if _, err := js.Publish(context.Background(), n.ChatSubject(alice.ID, "general"), data, jetstream.WithMsgID(msg.ID)); err != nil {
			t.Fatal(err)
		}
	}
	if after := count(); after != before+3 {
		t.Fatalf("cotal_messages_total{kind=channel} went %d -> %d after 3 publishes", before, after)
	}
	_, body := get(t, m.HTTPURL()+"/metrics")
	for _, want := range []string{`cotal_component_up{component="broker"} 1`, "cotal_connections", `cotal_backstop_lag{loop="fanout",space="main"}`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if code, body := get(t, m.HTTPURL()+"/varz"); code != http.StatusOK || !strings.Contains(body, "server_id") {
		t.Errorf("nats-server /varz on the same port = %d", code)
	}
}
