package delivery

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/wire"
)

func TestControlService(t *testing.T) {
	h := newHarness(t)
	alice, bob := h.newAgent("alice", "team", "team.>"), h.newAgent("bob", "team")

	t.Run("a request whose from.id is not the subject sender is refused with sender-mismatch", func(t *testing.T) {
		req, _ := wire.NewControlRequest(wire.OpListMemberships, nil, bob.ref())
		r := h.request(testNames.CtlSubject(wire.DeliveryService, alice.id), "", mustJSON(t, req))
		if r.OK || r.Error != wire.ReasonSenderMismatch {
			t.Fatalf("reply = %+v, want error %q", r, wire.ReasonSenderMismatch)
		}
	})
	t.Run("an unknown op is refused by name", func(t *testing.T) {
		r := alice.control("frobnicate", nil)
		if want := `op "frobnicate" not supported on the delivery control service`; r.OK || r.Error != want {
			t.Fatalf("reply = %+v, want error %q", r, want)
		}
	})
	t.Run("a reply subject outside the request's subtree gets no answer", func(t *testing.T) {
		subject := testNames.CtlSubject(wire.DeliveryService, alice.id)
		req, _ := wire.NewControlRequest(wire.OpListMemberships, nil, alice.ref())
		// Pointing the reply at a presence key is the injection docs/hostile-agents.md "Reply
		// subjects are the requester's" describes.
		if err := h.nc.PublishRequest(subject, testNames.PresenceKVSubject(bob.id), mustJSON(t, req)); err != nil {
			t.Fatal(err)
		}
		await.Check(t, waitFor, pollEvery, func() error {
			if h.svc.Stats().ControlRefusedReplySubject != 1 {
				return errorString("request not refused yet")
			}
			return nil
		})
	})
	t.Run("a request delivered twice under one request id is served once", func(t *testing.T) {
		subject := testNames.CtlSubject(wire.DeliveryService, alice.id)
		req, _ := wire.NewControlRequest(wire.OpListMemberships, nil, alice.ref())
		first, second := wire.ControlReplySubject(subject), wire.ControlReplySubject(subject)
		answers, err := h.nc.SubscribeSync(subject + ".reply.>")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = answers.Unsubscribe() }()
		for _, reply := range []string{first, second} {
			msg := &nats.Msg{Subject: subject, Reply: reply, Data: mustJSON(t, req),
				Header: nats.Header{wire.RequestIDHeader: {"one-request"}}}
			if err := h.nc.PublishMsg(msg); err != nil {
				t.Fatal(err)
			}
		}
		await.Check(t, waitFor, pollEvery, func() error {
			if h.svc.Stats().ControlDuplicates != 1 {
				return errorString("second copy not dropped yet")
			}
			return nil
		})
		if m, err := answers.NextMsg(waitFor); err != nil || m.Subject != first {
			t.Fatalf("first answer %v, %v; want one on %s", m, err, first)
		}
		if err := h.nc.Flush(); err != nil {
			t.Fatal(err)
		}
		if n, _, _ := answers.Pending(); n != 0 {
			t.Fatalf("%d more answers, want the first copy's only", n)
		}
	})
	t.Run("a join outside the read ACL is not durable", func(t *testing.T) {
		if r := bob.join("secret"); r.Durable || !strings.Contains(r.Reason, "read ACL") {
			t.Fatalf("join = %+v, want a read-ACL refusal", r)
		}
	})
	t.Run("a wildcard channel cannot be joined", func(t *testing.T) {
		if r := alice.join("team.>"); r.Durable || r.Reason == "" {
			t.Fatalf("join = %+v, want a refusal", r)
		}
	})
	t.Run("malformed args are refused as malformed-json", func(t *testing.T) {
		r := alice.control(wire.OpDurableJoin, map[string]any{"channel": 7})
		if r.OK || !strings.HasPrefix(r.Error, wire.ReasonMalformedJSON) {
			t.Fatalf("reply = %+v, want a malformed-json refusal", r)
		}
	})
	t.Run("listMemberships lists the active memberships by channel", func(t *testing.T) {
		alice.join("team.b")
		alice.join("team")
		var list wire.ListMembershipsReply
		h.decodeOK(alice.control(wire.OpListMemberships, nil), &list)
		want := []wire.MembershipInfo{{Channel: "team", Generation: 1, Activated: true}, {Channel: "team.b", Generation: 1, Activated: true}}
		if got, _ := json.Marshal(list.Memberships); string(got) != string(mustJSON(t, want)) {
			t.Fatalf("memberships = %s, want %s", got, mustJSON(t, want))
		}
	})
	t.Run("a leave naming another generation leaves nothing", func(t *testing.T) {
		if r := alice.leave("team", 99); !r.AlreadyLeft {
			t.Fatalf("leave = %+v, want alreadyLeft", r)
		}
		if rec := alice.membership("team"); rec.LeaveCursor != nil {
			t.Fatalf("record = %+v, want it still open", rec)
		}
	})
}

type errorString string

func (e errorString) Error() string { return string(e) }
