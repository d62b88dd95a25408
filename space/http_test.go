package space_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
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

// getAs sends method to url with Host host and the bearer token when token is set.
func getAs(t *testing.T, method, url, host, token string) (int, string) {
	t.Helper()
	r, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Host = host
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatalf("%s %s as %s: %v", method, url, host, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// console stands in for the web console on the listener: it answers every path it is given.
var console = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "console") })

func TestTheHTTPListenerAnswersOnlyToItsOwnNames(t *testing.T) {
	m := spacetest.New(t, func(o *space.Options) { o.HTTP, o.Console = "127.0.0.1:0", console })
	base := m.HTTPURL()
	_, port, err := net.SplitHostPort(strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	routes := []struct{ method, path, token string }{
		{"GET", "/healthz", ""}, {"GET", "/metrics", ""}, {"GET", "/varz", ""}, {"GET", "/nats/healthz", ""},
		{"GET", "/connz", m.HTTPToken()}, {"GET", "/jsz", m.HTTPToken()},
		{"GET", "/", ""}, {"GET", "/s/id/view/channels", ""}, {"POST", "/s/id/act/mint", ""},
	}
	for _, host := range []string{"rebind.attacker.example", "rebind.attacker.example:" + port, "127.0.0.1:1", "localhost.attacker.example:" + port} {
		for _, rt := range routes {
			t.Run(fmt.Sprintf("%s %s under Host %q is refused", rt.method, rt.path, host), func(t *testing.T) {
				code, body := getAs(t, rt.method, base+rt.path, host, rt.token)
				if code != http.StatusMisdirectedRequest || !strings.Contains(body, "does not name this listener") {
					t.Fatalf("status %d, want 421: %s", code, body)
				}
			})
		}
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port, "LocalHost.:" + port} {
		for _, rt := range routes {
			t.Run(fmt.Sprintf("%s %s under Host %q is answered", rt.method, rt.path, host), func(t *testing.T) {
				if code, body := getAs(t, rt.method, base+rt.path, host, rt.token); code != http.StatusOK {
					t.Fatalf("status %d, want 200: %.300s", code, body)
				}
			})
		}
	}
	t.Run("the identity endpoints still need the bearer token under the right Host", func(t *testing.T) {
		if code, _ := getAs(t, "GET", base+"/connz", "127.0.0.1:"+port, ""); code != http.StatusUnauthorized {
			t.Fatalf("status %d, want 401", code)
		}
	})
}

func TestAPublicHTTPListenerAnswersToTheMachinesNames(t *testing.T) {
	m := spacetest.New(t, func(o *space.Options) { o.HTTP, o.HTTPPublic, o.Console = "0.0.0.0:0", true, console })
	_, port, err := net.SplitHostPort(strings.TrimPrefix(m.HTTPURL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	base := "http://127.0.0.1:" + port
	hostname, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	answered := []string{"127.0.0.1:" + port, "localhost:" + port, hostname + ":" + port}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			answered = append(answered, net.JoinHostPort(n.IP.String(), port))
		}
	}
	for _, host := range answered {
		t.Run(host+" is answered", func(t *testing.T) {
			if code, body := getAs(t, "GET", base+"/healthz", host, ""); code != http.StatusOK {
				t.Fatalf("status %d: %s", code, body)
			}
		})
	}
	for _, host := range []string{"rebind.attacker.example:" + port, "198.51.100.7:" + port, hostname + ":1"} {
		t.Run(host+" is refused", func(t *testing.T) {
			if code, body := getAs(t, "GET", base+"/", host, ""); code != http.StatusMisdirectedRequest {
				t.Fatalf("status %d, want 421: %s", code, body)
			}
		})
	}
}
