package chaos_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// hostile is the cast of the hostile-input test: two well-behaved agents and mallory, who
// holds an agent credential of her own and writes whatever she likes with it.
type hostile struct {
	m          *space.Mesh
	alice, bob *endpoint.Endpoint
	bobSeen    *sink
	mallory    *provisioner.Credential
	malloryNC  *nats.Conn
	malloryJS  jetstream.JetStream
	names      wire.Names
	outcomes   []string
}

// TestHostileInputGetsAClearErrorAndTheMeshStaysUp sends what a broken or hostile client
// could: payloads over the broker's maximum (SPEC §5), JSON nested past any parser's depth,
// invalid UTF-8, a huge mention list, channels at and past wire.MaxChannelLen, and 10 000
// subscriptions from one credential. Each gets a clear error or is terminated as a permanent
// anomaly (SPEC §4, §5), and after each the mesh is healthy and a normal message still flows.
func TestHostileInputGetsAClearErrorAndTheMeshStaysUp(t *testing.T) {
	t.Parallel()
	h := newHostile(t)
	for _, c := range []struct {
		name string
		run  func(t *testing.T, h *hostile) string
	}{
		{"an oversized message is refused by the Endpoint before it is sent", oversizedEndpoint},
		{"an oversized payload is refused by the client library", oversizedClient},
		{"an oversized PUB on the wire is answered with an error and the connection closed", oversizedWire},
		{"JSON nested past the parser's depth is terminated by the receiver and skipped by the fan-out", deepJSON},
		{"JSON nested deep but within the parser's depth surfaces", deepButValidJSON},
		{"invalid UTF-8 is terminated as malformed-json", invalidUTF8},
		{"invalid UTF-8 text sent through the Endpoint arrives as valid UTF-8", invalidUTF8Endpoint},
		{"a message with 10 000 mentions is delivered and the mesh keeps up", hugeMentions},
		{"a channel at the length limit works end to end and one byte more is refused", channelLengthLimit},
		{"10 000 subscriptions from one credential are accepted and cost nobody else", manySubscriptions},
	} {
		t.Run(c.name, func(t *testing.T) {
			outcome := c.run(t, h)
			h.outcomes = append(h.outcomes, outcome)
			h.responsive(t)
		})
	}
	record(t, "hostile input (mesh healthy and a normal DM flows after each)", strings.Join(h.outcomes, "; "))
}

func newHostile(t *testing.T) *hostile {
	t.Helper()
	m := spacetest.New(t, func(o *space.Options) { o.Listen = "127.0.0.1:0" })
	h := &hostile{m: m, names: wire.NewNames("main"), bobSeen: newSink()}
	ctx := context.Background()
	var err error
	h.alice, err = m.Endpoint(ctx, space.AgentSpec{Name: "alice",
		Grants: provisioner.Grants{AllowSubscribe: []string{"h.>"}, AllowPublish: []string{"h.>"}}})
	if err != nil {
		t.Fatal(err)
	}
	h.bob, err = m.Endpoint(ctx, space.AgentSpec{Name: "bob", Grants: provisioner.Grants{AllowSubscribe: []string{"h.>"}},
		Endpoint: endpoint.Options{Handler: h.bobSeen.handler("bob", "bob"), Channels: []string{"h.x"}}})
	if err != nil {
		t.Fatal(err)
	}
	h.mallory, err = m.Mint(ctx, provisioner.MintRequest{Space: "main", Name: "mallory", Profile: provisioner.ProfileAgent,
		Grants: provisioner.Grants{AllowSubscribe: []string{"h.>"}, AllowPublish: []string{"h.>"}}})
	if err != nil {
		t.Fatal(err)
	}
	h.malloryNC, err = nats.Connect("", nats.InProcessServer(m.InProcess()),
		nats.UserJWTAndSeed(h.mallory.JWT, string(h.mallory.Seed)),
		nats.CustomInboxPrefix(wire.InboxPrefix(h.mallory.ID)),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.malloryNC.Close)
	if h.malloryJS, err = jetstream.New(h.malloryNC); err != nil {
		t.Fatal(err)
	}
	return h
}

// responsive requires a healthy mesh through which a normal DM still surfaces.
func (h *hostile) responsive(t *testing.T) {
	t.Helper()
	if err := h.m.Healthy(); err != nil {
		t.Fatalf("mesh unhealthy: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := h.alice.SendDM(ctx, h.bob.ID(), text("still there?"))
	if err != nil {
		t.Fatalf("a normal DM after hostile input: %v", err)
	}
	await.True(t, 30*time.Second, "a normal DM after hostile input", func() bool { return len(h.bobSeen.metas(r.ID)) == 1 })
}

// raw builds a valid message from mallory to bob, or on channel, with parts as given.
func (h *hostile) raw(channel string, parts string) []byte {
	routing := fmt.Sprintf(`"to":%q`, h.bob.ID())
	if channel != "" {
		routing = fmt.Sprintf(`"channel":%q`, channel)
	}
	return []byte(fmt.Sprintf(`{"id":%q,"ts":%d,"space":"main","from":{"id":%q,"name":"mallory"},%s,"parts":%s}`,
		wire.NewMessageID(), time.Now().UnixMilli(), h.mallory.ID, routing, parts))
}

// publishRaw stores data on subject through JetStream as mallory.
func (h *hostile) publishRaw(t *testing.T, subject string, data []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := h.malloryJS.Publish(ctx, subject, data); err != nil {
		t.Fatalf("mallory's raw publish on %s: %v", subject, err)
	}
}

func (h *hostile) dmSubject() string { return h.names.InstSubject(h.bob.ID(), h.mallory.ID) }

// terminated waits until bob terminated one more malformed-json copy than before.
func (h *hostile) terminated(t *testing.T, before uint64) {
	t.Helper()
	await.True(t, 30*time.Second, "bob terminating the copy as malformed-json", func() bool {
		return h.bob.Stats().Terminated.Of(wire.ReasonMalformedJSON) > before
	})
}

func oversizedEndpoint(t *testing.T, h *hostile) string {
	big := strings.Repeat("x", int(h.malloryNC.MaxPayload()))
	_, err := h.alice.SendDM(context.Background(), h.bob.ID(), text(big))
	if !errors.Is(err, endpoint.ErrTooLarge) {
		t.Fatalf("oversized SendDM: %v, want ErrTooLarge", err)
	}
	return "oversized via the Endpoint: ErrTooLarge"
}

func oversizedClient(t *testing.T, h *hostile) string {
	big := make([]byte, h.malloryNC.MaxPayload()+1)
	if err := h.malloryNC.Publish(h.dmSubject(), big); !errors.Is(err, nats.ErrMaxPayload) {
		t.Fatalf("oversized raw publish: %v, want nats.ErrMaxPayload", err)
	}
	return "oversized via nats.go: ErrMaxPayload"
}

// oversizedWire authenticates over TCP by hand and announces a PUB bigger than max_payload,
// which no client library would send.
func oversizedWire(t *testing.T, h *hostile) string {
	link, err := h.m.Link("main")
	if err != nil {
		t.Fatal(err)
	}
	l, _ := wire.ParseLink(link)
	kp, err := nkeys.FromSeed(h.mallory.Seed)
	if err != nil {
		t.Fatal(err)
	}
	conn, rd := rawConnect(t, net.JoinHostPort(l.Host, fmt.Sprint(l.Port)), h.mallory.JWT, kp)
	defer conn.Close()
	fmt.Fprintf(conn, "PUB %s %d\r\n", h.dmSubject(), h.malloryNC.MaxPayload()*2)
	var lines []string
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		line, err := rd.ReadString('\n')
		if line != "" {
			lines = append(lines, strings.TrimSpace(line))
		}
		if err != nil {
			break
		}
	}
	got := strings.Join(lines, " | ")
	if !strings.Contains(got, "Maximum Payload") {
		t.Fatalf("the broker answered %q to an oversized PUB, want a Maximum Payload error and a close", got)
	}
	return "oversized PUB on the wire: " + lines[len(lines)-1] + ", connection closed"
}

// rawConnect opens a TCP connection and authenticates with a user JWT and a nonce signed by
// its key (decentralized auth, SPEC §9), returning once the broker answered PONG.
func rawConnect(t *testing.T, addr, userJWT string, kp nkeys.KeyPair) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	rd := bufio.NewReader(conn)
	line, err := rd.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "INFO ") {
		t.Fatalf("broker greeting %q: %v", line, err)
	}
	var info struct{ Nonce string }
	if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "INFO ")), &info); err != nil {
		t.Fatal(err)
	}
	sig, err := kp.Sign([]byte(info.Nonce))
	if err != nil {
		t.Fatal(err)
	}
	connect, _ := json.Marshal(map[string]any{"verbose": false, "pedantic": false, "protocol": 1, "headers": true,
		"jwt": userJWT, "sig": base64.RawURLEncoding.EncodeToString(sig), "name": "mallory-raw"})
	fmt.Fprintf(conn, "CONNECT %s\r\nPING\r\n", connect)
	if line, err := rd.ReadString('\n'); err != nil || strings.TrimSpace(line) != "PONG" {
		t.Fatalf("raw CONNECT answered %q: %v", line, err)
	}
	return conn, rd
}

// nested returns a JSON array nested depth levels deep.
func nested(depth int) string { return strings.Repeat("[", depth) + strings.Repeat("]", depth) }

func deepJSON(t *testing.T, h *hostile) string {
	before := h.bob.Stats().Terminated.Of(wire.ReasonMalformedJSON)
	fanout := spacetest.DeliveryStats(t, h.m, "main")
	skipped := fanout().FanoutSkipped
	parts := `[{"kind":"data","data":` + nested(20000) + `}]`
	h.publishRaw(t, h.dmSubject(), h.raw("", parts))
	h.terminated(t, before)
	h.publishRaw(t, h.names.ChatSubject(h.mallory.ID, "h.x"), h.raw("h.x", parts))
	await.True(t, 30*time.Second, "the fan-out skipping the deep message", func() bool {
		return fanout().FanoutSkipped > skipped
	})
	return "JSON nested 20 000 deep: receiver terminates it (malformed-json), fan-out skips it"
}

func deepButValidJSON(t *testing.T, h *hostile) string {
	var data any
	if err := json.Unmarshal([]byte(nested(5000)), &data); err != nil {
		t.Fatal(err)
	}
	part, err := wire.DataPart(data)
	if err != nil {
		t.Fatal(err)
	}
	r, err := h.alice.SendDM(context.Background(), h.bob.ID(), []wire.Part{part})
	if err != nil {
		t.Fatalf("a 5 000-deep data part: %v", err)
	}
	await.True(t, 30*time.Second, "the deep but valid message", func() bool { return len(h.bobSeen.metas(r.ID)) == 1 })
	return "JSON nested 5 000 deep: surfaced"
}

func invalidUTF8(t *testing.T, h *hostile) string {
	before := h.bob.Stats().Terminated.Of(wire.ReasonMalformedJSON)
	h.publishRaw(t, h.dmSubject(), h.raw("", "[{\"kind\":\"text\",\"text\":\"\xff\xfe\xfd\"}]"))
	h.terminated(t, before)
	return "invalid UTF-8 on the wire: terminated (malformed-json)"
}

func invalidUTF8Endpoint(t *testing.T, h *hostile) string {
	texts := make(chan string, 16)
	record := h.bobSeen.handler("bob", "bob")
	h.bob.Handle(func(ctx context.Context, d endpoint.Delivery) error {
		if len(d.Message.Parts) == 1 {
			texts <- d.Message.Parts[0].Text
		}
		return record(ctx, d)
	})
	defer h.bob.Handle(record)
	if _, err := h.alice.SendDM(context.Background(), h.bob.ID(), []wire.Part{wire.TextPart("a\xffb")}); err != nil {
		t.Fatalf("SendDM with invalid UTF-8 text: %v", err)
	}
	select {
	case got := <-texts:
		if !utf8.ValidString(got) {
			t.Fatalf("bob surfaced invalid UTF-8 %q", got)
		}
		return fmt.Sprintf("invalid UTF-8 through the Endpoint: surfaced as valid UTF-8 %q", got)
	case <-time.After(30 * time.Second):
		t.Fatal("the DM with invalid UTF-8 text did not surface")
		return ""
	}
}

func hugeMentions(t *testing.T, h *hostile) string {
	mentions := make([]string, 10000)
	for i := range mentions {
		mentions[i] = fmt.Sprintf("peer-%05d", i)
	}
	mentions[5000] = "bob"
	r, err := h.alice.Send(context.Background(), "h.x", text("a crowded room"), endpoint.WithMentions(mentions...))
	if err != nil {
		t.Fatalf("send with 10 000 mentions: %v", err)
	}
	await.True(t, 30*time.Second, "the message with 10 000 mentions", func() bool { return len(h.bobSeen.metas(r.ID)) == 1 })
	open := spacetest.New(t, func(o *space.Options) { o.Open = true })
	return "10 000 mentions: delivered on a durable channel; " + hugeMentionsLive(t, open, mentions)
}

// hugeMentionsLive sends the mention list on an open mesh, whose channels are live, so the
// fan-out resolves every name against presence (SPEC §4 mention routing).
func hugeMentionsLive(t *testing.T, m *space.Mesh, mentions []string) string {
	t.Helper()
	ctx := context.Background()
	got := newSink()
	bob, err := m.Endpoint(ctx, space.AgentSpec{Name: "bob", Endpoint: endpoint.Options{Handler: got.handler("bob", "bob")}})
	if err != nil {
		t.Fatal(err)
	}
	alice, err := m.Endpoint(ctx, space.AgentSpec{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	await.True(t, 30*time.Second, "bob in alice's roster", func() bool { p, ok := alice.Roster().Peer(bob.ID()); return ok && p.Online })
	dlv := spacetest.DeliveryStats(t, m, "main")
	r, err := alice.Send(ctx, "h.x", text("a crowded live room"), endpoint.WithMentions(mentions...))
	if err != nil {
		t.Fatalf("send with 10 000 mentions on a live channel: %v", err)
	}
	await.True(t, 30*time.Second, "bob's durable mention copy", func() bool { return len(got.metas(r.ID)) == 1 })
	if err := m.Healthy(); err != nil {
		t.Fatalf("open mesh unhealthy after 10 000 mentions: %v", err)
	}
	return fmt.Sprintf("on a live channel: the one present name got its mention copy (mention copies written: %d)",
		dlv().FannedOutMention)
}

func channelLengthLimit(t *testing.T, h *hostile) string {
	ctx := context.Background()
	long := "h." + strings.Repeat("a", wire.MaxChannelLen-2)
	res, err := h.bob.Join(ctx, long)
	if err != nil || res.State != endpoint.JoinedDurable {
		t.Fatalf("join a %d-byte channel: %+v, %v; want joined durable", len(long), res, err)
	}
	r, err := h.alice.Send(ctx, long, text("at the limit"))
	if err != nil {
		t.Fatalf("send on a %d-byte channel: %v", len(long), err)
	}
	await.True(t, 30*time.Second, "the message on the longest channel", func() bool { return len(h.bobSeen.metas(r.ID)) == 1 })
	if _, err := h.bob.Join(ctx, long+"a"); !errors.Is(err, wire.ErrInvalidChannel) {
		t.Fatalf("join a channel one byte over the limit: %v, want ErrInvalidChannel", err)
	}
	if _, err := h.alice.Send(ctx, long+"a", text("over")); !errors.Is(err, wire.ErrInvalidChannel) {
		t.Fatalf("send on a channel one byte over the limit: %v, want ErrInvalidChannel", err)
	}
	_, err = h.m.Mint(ctx, provisioner.MintRequest{Space: "main", Name: "wide", Profile: provisioner.ProfileAgent,
		Grants: provisioner.Grants{AllowSubscribe: []string{long + "a"}}})
	if !errors.Is(err, wire.ErrInvalidChannel) {
		t.Fatalf("mint a read ACL one byte over the limit: %v, want ErrInvalidChannel", err)
	}
	return fmt.Sprintf("%d-byte channel: joined durable and delivered; %d bytes: ErrInvalidChannel from Join, Send and Mint",
		len(long), len(long)+1)
}

func manySubscriptions(t *testing.T, h *hostile) string {
	before := h.m.Broker().Server().NumSubscriptions()
	subs := make([]*nats.Subscription, 0, 10000)
	for i := range 10000 {
		sub, err := h.malloryNC.Subscribe(h.names.ChatFilter(fmt.Sprintf("h.flood%d", i)), func(*nats.Msg) {})
		if err != nil {
			t.Fatalf("subscription %d: %v", i, err)
		}
		subs = append(subs, sub)
	}
	if err := h.malloryNC.FlushTimeout(30 * time.Second); err != nil {
		t.Fatalf("flush after 10 000 subscriptions: %v", err)
	}
	if err := h.malloryNC.LastError(); err != nil {
		return "10 000 subscriptions: refused with " + err.Error()
	}
	added := h.m.Broker().Server().NumSubscriptions() - before
	if added < 10000 {
		t.Fatalf("the broker holds %d more subscriptions, want at least 10 000", added)
	}
	for _, s := range subs {
		_ = s.Unsubscribe()
	}
	if err := h.malloryNC.FlushTimeout(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("10 000 subscriptions from one credential: accepted (%d held), released on unsubscribe", added)
}
