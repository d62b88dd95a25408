package wire

import (
	"errors"
	"strings"
	"testing"
)

func TestControlRequestRoundTrip(t *testing.T) {
	req, err := NewControlRequest("durableJoin", map[string]string{"channel": "team.backend"}, vecFrom)
	if err != nil {
		t.Fatal(err)
	}
	subject := NewNames("main").CtlSubject(DeliveryService, vecAlice)
	sub, got, err := CheckControlRequest(subject, mustMarshal(t, req))
	if err != nil {
		t.Fatal(err)
	}
	if sub.Rest != DeliveryService || got.Op != "durableJoin" || string(got.Args) != `{"channel":"team.backend"}` {
		t.Fatalf("CheckControlRequest = %+v, %+v", sub, got)
	}
	bare, err := NewControlRequest("listMemberships", nil, vecFrom)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(mustMarshal(t, bare)); strings.Contains(s, "args") {
		t.Fatalf("a request without args encodes %s", s)
	}
}

func TestNewControlRequestRefusesInvalidRequests(t *testing.T) {
	tests := []struct {
		name string
		op   string
		args any
		from EndpointRef
	}{
		{"an empty op", "", nil, vecFrom},
		{"array args", "x", []int{1}, vecFrom},
		{"string args", "x", "channel", vecFrom},
		{"no sender id", "x", nil, EndpointRef{Name: "alice"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewControlRequest(tt.op, tt.args, tt.from); !errors.Is(err, ErrInvalidControl) {
				t.Fatalf("NewControlRequest = %v, want ErrInvalidControl", err)
			}
		})
	}
}

func TestCheckControlRequestClassifiesEveryRejection(t *testing.T) {
	n := NewNames("main")
	ctl := n.CtlSubject(DeliveryService, vecAlice)
	tests := []struct {
		name, subject, payload, reason string
	}{
		{"a valid request passes", ctl, `{"op":"x","from":{"id":"` + vecAlice + `","name":"a"}}`, ""},
		{"null args count as none", ctl, `{"op":"x","args":null,"from":{"id":"` + vecAlice + `"}}`, ""},
		{"a chat subject is not a control subject", n.ChatSubject(vecAlice, "x"),
			`{"op":"x","from":{"id":"` + vecAlice + `"}}`, ReasonMalformedSubject},
		{"a reply subject is not a request", ctl + ".reply.x", `{"op":"x","from":{"id":"` + vecAlice + `"}}`,
			ReasonMalformedSubject},
		{"another sender is a mismatch", ctl, `{"op":"x","from":{"id":"` + vecBob + `"}}`, ReasonSenderMismatch},
		{"no from is a mismatch", ctl, `{"op":"x"}`, ReasonSenderMismatch},
		{"no op is malformed", ctl, `{"from":{"id":"` + vecAlice + `"}}`, ReasonMalformedJSON},
		{"a numeric op is malformed", ctl, `{"op":1,"from":{"id":"` + vecAlice + `"}}`, ReasonMalformedJSON},
		{"array args are malformed", ctl, `{"op":"x","args":[],"from":{"id":"` + vecAlice + `"}}`, ReasonMalformedJSON},
		{"not JSON is malformed", ctl, `op=x`, ReasonMalformedJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, req, err := CheckControlRequest(tt.subject, []byte(tt.payload))
			if tt.reason == "" {
				if err != nil || req == nil {
					t.Fatalf("CheckControlRequest = %v, %v", req, err)
				}
				return
			}
			if reason, _ := ReasonOf(err); reason != tt.reason {
				t.Fatalf("CheckControlRequest = %v, %v; want reason %s", req, err, tt.reason)
			}
		})
	}
}

func TestControlReplies(t *testing.T) {
	ok, err := ReplyOK(map[string]bool{"durable": true})
	if err != nil {
		t.Fatal(err)
	}
	empty, err := ReplyOK(nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		reply   ControlReply
		json    string
		refused bool
	}{
		{"a success with data", ok, `{"ok":true,"data":{"durable":true}}`, false},
		{"a success without data", empty, `{"ok":true}`, false},
		{"a refusal with a reason", ReplyError(`op "x" not supported`), `{"ok":false,"error":"op \"x\" not supported"}`, true},
		{"a refusal without a reason", ControlReply{}, `{"ok":false}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(mustMarshal(t, tt.reply)); got != tt.json {
				t.Fatalf("Marshal = %s, want %s", got, tt.json)
			}
			back, err := DecodeControlReply([]byte(tt.json))
			if err != nil {
				t.Fatal(err)
			}
			if got := string(mustMarshal(t, back)); got != tt.json {
				t.Fatalf("round trip = %s, want %s", got, tt.json)
			}
			if err := back.Err(); errors.Is(err, ErrControlRefused) != tt.refused {
				t.Fatalf("Err = %v, want refused = %v", err, tt.refused)
			}
			if tt.reply.Error != "" && !strings.Contains(back.Err().Error(), tt.reply.Error) {
				t.Fatalf("Err = %v does not carry the server's reason", back.Err())
			}
		})
	}
	if _, err := ReplyOK(func() {}); err == nil {
		t.Error("ReplyOK with unencodable data succeeded")
	}
}

func TestDecodeControlReplyRefusesWhatIsNotAReply(t *testing.T) {
	for _, payload := range []string{`{}`, `{"ok":"yes"}`, `{"ok":null}`, `[true]`, `{"stream":"DM_main","seq":1}`, ""} {
		t.Run(payload, func(t *testing.T) {
			if r, err := DecodeControlReply([]byte(payload)); err == nil {
				t.Fatalf("DecodeControlReply = %+v, want an error", r)
			}
		})
	}
	r, err := DecodeControlReply([]byte(`{"ok":true,"data":null,"extra":1}`))
	if err != nil || r.Data != nil {
		t.Fatalf("DecodeControlReply = %+v, %v; want null data dropped and extra ignored", r, err)
	}
}

func TestControlReplySubjectsStayInTheRequestersSubtree(t *testing.T) {
	req := NewNames("main").CtlSubject(DeliveryService, vecAlice)
	fresh := ControlReplySubject(req)
	if err := CheckControlReplySubject(req, fresh); err != nil {
		t.Fatalf("a fresh reply subject %q is refused: %v", fresh, err)
	}
	if fresh == ControlReplySubject(req) {
		t.Fatal("two reply subjects are equal")
	}
	refused := []string{
		"",
		req,
		req + ".reply.",
		req + ".reply.a.b",
		req + ".reply.*",
		req + ".reply.>",
		"$KV.cotal_presence_main." + vecBob,
		NewNames("main").CtlSubject(DeliveryService, vecBob) + ".reply.x",
		"_INBOX." + vecAlice,
		"_R_.Ab3dEf.xYz12",
		"_R_.",
		"_R_.abc",
		"_R_.abc.*",
		"_R_.abc.>",
		"_R_.abc..x",
	}
	for _, reply := range refused {
		t.Run(reply, func(t *testing.T) {
			if err := CheckControlReplySubject(req, reply); !errors.Is(err, ErrInvalidControl) {
				t.Fatalf("CheckControlReplySubject(%q) = %v, want ErrInvalidControl", reply, err)
			}
		})
	}
}
