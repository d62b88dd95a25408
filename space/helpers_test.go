package space_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

// connect opens a raw in-process connection with a minted credential, the way an agent would.
func connect(t *testing.T, m *space.Mesh, cred *provisioner.Credential, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := dial(m, cred, opts...)
	if err != nil {
		t.Fatalf("connect %s: %v", cred.Name, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// dial is connect without the test bookkeeping, for attempts that are expected to fail.
func dial(m *space.Mesh, cred *provisioner.Credential, opts ...nats.Option) (*nats.Conn, error) {
	base := []nats.Option{
		nats.InProcessServer(m.InProcess()),
		nats.UserJWTAndSeed(cred.JWT, string(cred.Seed)),
		// SPEC §9 item 1: replies ride the per-identity inbox, the only one sub.allow permits.
		nats.CustomInboxPrefix(wire.InboxPrefix(cred.ID)),
	}
	return nats.Connect("", append(base, opts...)...)
}

// mint issues a provisioned credential in space "main".
func mint(t *testing.T, m *space.Mesh, name string, p provisioner.Profile, g provisioner.Grants) *provisioner.Credential {
	t.Helper()
	return mintWith(t, m, provisioner.MintRequest{Space: "main", Name: name, Profile: p, Grants: g})
}

// mintWith issues the credential req describes, with its bind-only consumers pre-created.
func mintWith(t *testing.T, m *space.Mesh, req provisioner.MintRequest) *provisioner.Credential {
	t.Helper()
	cred, err := m.Mint(context.Background(), req)
	if err != nil {
		t.Fatalf("mint %s: %v", req.Name, err)
	}
	return cred
}

// envelope is a valid CotalMessage from cred on channel (empty for a DM or anycast body), so the
// mesh's own delivery loops see well-formed traffic.
func envelope(t *testing.T, cred *provisioner.Credential, channel, text string) []byte {
	t.Helper()
	msg := wire.CotalMessage{ID: wire.NewMessageID(), TS: time.Now().UnixMilli(), Space: cred.Space,
		From: wire.EndpointRef{ID: cred.ID, Name: cred.Name}, Channel: channel,
		Parts: []wire.Part{wire.TextPart(text)}}
	data, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// answerWait bounds every wait for the broker: a flush, a JetStream answer, a delivery. It is
// paid in full only when a test is about to fail.
const answerWait = 5 * time.Second

// peer is one raw in-process connection with a minted credential, as a hostile or a well
// behaved client would hold it.
type peer struct {
	nc   *nats.Conn
	cred *provisioner.Credential
	seen error // the connection error settle last returned
}

func newPeer(t *testing.T, m *space.Mesh, cred *provisioner.Credential) *peer {
	t.Helper()
	// settle reads violations synchronously from LastError; the handler only replaces
	// nats.go's default one, which prints every expected refusal to stderr.
	quiet := nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})
	return &peer{nc: connect(t, m, cred, quiet), cred: cred}
}

// settle waits until the broker has processed everything p sent and returns the
// permissions violation it reported meanwhile, if any. The broker queues -ERR before the
// PONG that ends the flush, and the client records it before it reads that PONG, so a
// refusal can never arrive after settle returned nil.
func (p *peer) settle() error {
	if err := p.nc.FlushTimeout(answerWait); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	err := p.nc.LastError()
	if err == nil || err == p.seen {
		return nil
	}
	p.seen = err
	return err
}

// request publishes body (with hdr) on subject and waits for the answer on reply, or on a
// fresh inbox when reply is empty. A refused publish returns the permissions violation at
// once, a JetStream error answer its *jetstream.APIError, an absent service
// nats.ErrNoResponders; status answers such as 404 No Messages are returned as messages.
func (p *peer) request(subject, reply string, hdr nats.Header, body []byte) (*nats.Msg, error) {
	if reply == "" {
		reply = p.nc.NewInbox()
	}
	sub, err := p.nc.SubscribeSync(reply)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	if err := p.nc.PublishMsg(&nats.Msg{Subject: subject, Reply: reply, Header: hdr, Data: body}); err != nil {
		return nil, err
	}
	if err := p.settle(); err != nil {
		return nil, err
	}
	msg, err := sub.NextMsg(answerWait)
	if err != nil {
		return nil, fmt.Errorf("no answer on %s: %w", subject, err)
	}
	if msg.Header.Get("Status") == "503" {
		return nil, nats.ErrNoResponders
	}
	var answer struct {
		Error *jetstream.APIError `json:"error"`
	}
	if json.Unmarshal(msg.Data, &answer) == nil && answer.Error != nil {
		return msg, answer.Error
	}
	return msg, nil
}

// jetStream is the JetStream client the endpoint package would use on p's connection.
func (p *peer) jetStream(t *testing.T) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(p.nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// explain adds the connection's last error to err: a JetStream client call that the broker
// refused only times out, and the violation says why.
func (p *peer) explain(err error) error {
	if last := p.nc.LastError(); err != nil && last != nil {
		return fmt.Errorf("%w (connection error: %v)", err, last)
	}
	return err
}

// attempt is one thing a credential tries; nil means the broker let it through and it did
// what it asked.
type attempt func(ctx context.Context, t *testing.T, p *peer) error

// subscribe subscribes to subject.
func subscribe(subject string) attempt {
	return func(_ context.Context, _ *testing.T, p *peer) error {
		if _, err := p.nc.SubscribeSync(subject); err != nil {
			return err
		}
		return p.settle()
	}
}

// publish sends a core message on subject, as a forger that wants no answer would.
func publish(subject string) attempt {
	return func(_ context.Context, _ *testing.T, p *peer) error {
		if err := p.nc.Publish(subject, []byte(`{}`)); err != nil {
			return err
		}
		return p.settle()
	}
}

// store publishes a well-formed message from p on subject through JetStream, with hdr, and
// requires the stream's acknowledgement.
func store(subject, channel string, hdr nats.Header) attempt {
	return func(_ context.Context, t *testing.T, p *peer) error {
		msg, err := p.request(subject, "", hdr, envelope(t, p.cred, channel, "probe"))
		if err != nil {
			return err
		}
		var ack jetstream.PubAck
		if err := json.Unmarshal(msg.Data, &ack); err != nil || ack.Stream == "" {
			return fmt.Errorf("publish on %s: no stream acknowledged it (%q)", subject, msg.Data)
		}
		return nil
	}
}

// api sends a JetStream API request with body encoded as JSON (nil: empty).
func api(subject string, body any) attempt {
	return func(_ context.Context, t *testing.T, p *peer) error {
		var data []byte
		if body != nil {
			var err error
			if data, err = json.Marshal(body); err != nil {
				t.Fatal(err)
			}
		}
		_, err := p.request(subject, "", nil, data)
		return err
	}
}

// createBody is the request body of a consumer create on stream.
func createBody(stream string, cfg jetstream.ConsumerConfig) map[string]any {
	return map[string]any{"stream_name": stream, "config": cfg}
}

// outcome is how an attempt must end: permitted, a permissions violation of one verb on one
// subject, or a JetStream API error with one code.
type outcome struct {
	verb    string // "Publish" or "Subscription"
	subject string
	code    jetstream.ErrorCode
}

var permitted = outcome{}

func deniedPublish(subject string) outcome   { return outcome{verb: "Publish", subject: subject} }
func deniedSubscribe(subject string) outcome { return outcome{verb: "Subscription", subject: subject} }

// refusedBy is a JetStream API error; the server's error identifiers are its error codes.
func refusedBy(id server.ErrorIdentifier) outcome { return outcome{code: jetstream.ErrorCode(id)} }

func (o outcome) check(t *testing.T, err error) {
	t.Helper()
	switch {
	case o.verb != "":
		want := fmt.Sprintf("for %s to %q", o.verb, o.subject)
		if !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v; want the broker's permissions violation %s", err, want)
		}
	case o.code != 0:
		var apiErr *jetstream.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode != o.code {
			t.Fatalf("got %v; want JetStream error code %d", err, o.code)
		}
	case err != nil:
		t.Fatalf("refused, want permitted: %v", err)
	}
}

// confinementCase is one row of a confinement table: who tries what, and how it must end.
type confinementCase struct {
	name string
	as   *provisioner.Credential
	try  attempt
	want outcome
}

// run runs every case on a fresh connection of its credential, so that no case sees another
// case's violations.
func run(t *testing.T, m *space.Mesh, cases []confinementCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*answerWait)
			defer cancel()
			tc.want.check(t, tc.try(ctx, t, newPeer(t, m, tc.as)))
		})
	}
}

// refusePublish, refuseSubscribe and refuseAPI are the rows whose attempt and refusal name
// the same subject.
func refusePublish(name string, as *provisioner.Credential, subject string) confinementCase {
	return confinementCase{name, as, publish(subject), deniedPublish(subject)}
}

func refuseSubscribe(name string, as *provisioner.Credential, subject string) confinementCase {
	return confinementCase{name, as, subscribe(subject), deniedSubscribe(subject)}
}

func refuseAPI(name string, as *provisioner.Credential, subject string, body any) confinementCase {
	return confinementCase{name, as, api(subject, body), deniedPublish(subject)}
}

// lifecycleWait bounds how long a credential may outlive its expiry or revocation: JWT
// expiry has one-second resolution, so a 2 s credential is cut off within about 3 s.
const lifecycleWait = 15 * time.Second

// watched is a connection that does not reconnect and reports how it ended.
type watched struct {
	nc       *nats.Conn
	errs     chan error
	closed   chan struct{}
	closedAt time.Time // written before closed is closed
}

func watchConn(t *testing.T, m *space.Mesh, cred *provisioner.Credential) *watched {
	t.Helper()
	w, err := dialWatched(m, cred)
	if err != nil {
		t.Fatalf("connect %s: %v", cred.Name, err)
	}
	t.Cleanup(w.nc.Close)
	return w
}

// watchConnMayEnd is watchConn for a connection the broker is expected to close: one it
// closes before the client's handshake completes (the client reads EOF) is returned already
// closed.
func watchConnMayEnd(t *testing.T, m *space.Mesh, cred *provisioner.Credential) *watched {
	t.Helper()
	w, err := dialWatched(m, cred)
	if err != nil {
		if !errors.Is(err, io.EOF) {
			t.Fatalf("connect %s: %v", cred.Name, err)
		}
		w.closedAt = time.Now()
		close(w.closed)
		return w
	}
	t.Cleanup(w.nc.Close)
	return w
}

// dialWatched connects cred without reconnecting, recording its errors and its close.
func dialWatched(m *space.Mesh, cred *provisioner.Credential) (*watched, error) {
	w := &watched{errs: make(chan error, 16), closed: make(chan struct{})}
	var err error
	w.nc, err = dial(m, cred, nats.NoReconnect(),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case w.errs <- err:
			default:
			}
		}),
		nats.ClosedHandler(func(*nats.Conn) {
			w.closedAt = time.Now()
			close(w.closed)
		}))
	return w, err
}

// cutOff requires the broker to close the connection with want. nats.go runs the error
// callback before the closed callback on the same dispatcher, so want is queued by then.
func (w *watched) cutOff(t *testing.T, want error) {
	t.Helper()
	select {
	case <-w.closed:
	case <-time.After(lifecycleWait):
		t.Fatalf("still connected after %v; want it cut off with %v", lifecycleWait, want)
	}
	for {
		select {
		case err := <-w.errs:
			if errors.Is(err, want) {
				return
			}
		default:
			t.Fatalf("closed without %v (last error: %v)", want, w.nc.LastError())
		}
	}
}

// refusedConnect polls until the broker refuses cred's connect, and requires the refusal to
// be an authentication one. Polling covers the second in which an expiring JWT still passes
// the connect check.
func refusedConnect(t *testing.T, m *space.Mesh, cred *provisioner.Credential) {
	t.Helper()
	var refusal error
	await.True(t, lifecycleWait, "the broker to refuse "+cred.Name, func() bool {
		nc, err := dial(m, cred, nats.NoReconnect())
		if err != nil {
			refusal = err
			return true
		}
		nc.Close()
		return false
	})
	if !authRefusal(refusal) {
		t.Fatalf("connect failed with %v; want an authentication refusal", refusal)
	}
}

// authRefusal reports whether err is the broker refusing a credential. A connect that the
// broker accepts and cuts off at once (the JWT expired meanwhile) fails with a protocol error
// that matches no nats.go sentinel, so the broker's texts are matched too.
func authRefusal(err error) bool {
	if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked) {
		return true
	}
	text := strings.ToLower(err.Error())
	return strings.Contains(text, "user authentication expired") || strings.Contains(text, "user authentication revoked")
}
