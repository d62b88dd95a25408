package wire

import (
	"bytes"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzParseSubject checks that every subject is classified: either it parses and the
// builders of Names rebuild it exactly, or the error is a malformed-subject anomaly.
func FuzzParseSubject(f *testing.F) {
	for _, v := range loadSubjectVectors(f) {
		f.Add(v.Subject)
	}
	for _, s := range []string{"", "cotal", "cotal.a.chat.b.c.d", "cotal.a.inst.b.c.d", "cotal.a.ctl.b.c",
		"cotal.a.chat.*.>", "cotal..svc.b.c", "$JS.API.INFO", "cotal.a.chat.b.c d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sub, err := ParseSubject(s)
		if err != nil {
			if reason, ok := ReasonOf(err); !ok || reason != ReasonMalformedSubject {
				t.Fatalf("ParseSubject(%q) error %v has reason %q", s, err, reason)
			}
			return
		}
		n := NewNames(sub.Space)
		var rebuilt string
		switch sub.Kind {
		case KindChat:
			rebuilt = n.ChatSubject(sub.Sender, sub.Rest)
		case KindInst:
			rebuilt = n.InstSubject(sub.Rest, sub.Sender)
		case KindSvc:
			rebuilt = n.SvcSubject(sub.Rest, sub.Sender)
		case KindCtl:
			rebuilt = n.CtlSubject(sub.Rest, sub.Sender)
		default:
			t.Fatalf("ParseSubject(%q) returned kind %q", s, sub.Kind)
		}
		if rebuilt != s {
			t.Fatalf("ParseSubject(%q) = %+v, which rebuilds as %q", s, sub, rebuilt)
		}
		if sub.Kind == KindChat && ValidatePolicyChannel(sub.Rest) != nil {
			t.Fatalf("chat subject %q yields channel %q that is not a sanitized channel", s, sub.Rest)
		}
	})
}

// FuzzDecodeMessage checks that every payload is classified: an error carries one of the two
// payload reasons, and an accepted message is valid, re-encodes to schema-valid JSON and
// decodes again to the same message.
func FuzzDecodeMessage(f *testing.F) {
	for _, file := range []string{"sample-multicast.json", "sample-unicast.json"} {
		f.Add(readRepoTestdata(f, file))
	}
	for _, s := range []string{"", "null", "[]", `{"from":{}}`, `{"stream":"DM_main","seq":1}`,
		`{"id":"x","ts":1.5e3,"space":"s","from":{"id":"i","name":"n"},"toService":"r",` +
			`"parts":[{"kind":"data","data":null},{"kind":"com.acme.x","f":[1]}]}`} {
		f.Add([]byte(s))
	}
	sch := compileMessageSchema(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeMessage(data)
		if err != nil {
			reason, ok := ReasonOf(err)
			if !ok || (reason != ReasonMalformedJSON && reason != ReasonSenderMismatch) || m != nil {
				t.Fatalf("DecodeMessage(%q) = %v, %v (reason %q)", data, m, err, reason)
			}
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("DecodeMessage(%q) accepted an invalid message: %v", data, err)
		}
		encoded := mustMarshal(t, m)
		if err := validateAgainstSchema(sch, encoded); err != nil {
			t.Fatalf("DecodeMessage(%q) re-encodes to schema-invalid %s: %v", data, encoded, err)
		}
		again, err := DecodeMessage(encoded)
		if err != nil || !bytes.Equal(mustMarshal(t, again), encoded) {
			t.Fatalf("re-decoding %s = %v, %v", encoded, again, err)
		}
	})
}

// FuzzParseLink checks that a parsed link formats back to itself and that every refusal wraps
// ErrInvalidLink.
func FuzzParseLink(f *testing.F) {
	for _, s := range []string{"cotal://h/main", "cotals://tok@h:7422/main?channel=a,b.>",
		"cotal://u:p@[::1]:1/s?channels=x&channel=y", "cotal://h/my%20space?channel=%2A", "nats://h/x",
		"cotal://h:/x", "cotal://a%40b:p%3Aw@h/main", "cotal://h/main?channel=a,,b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLink(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidLink) {
				t.Fatalf("ParseLink(%q) error %v does not wrap ErrInvalidLink", s, err)
			}
			return
		}
		back, err := ParseLink(l.String())
		if err != nil || !reflect.DeepEqual(back, l) {
			t.Fatalf("ParseLink(%q) = %+v; its String %q parses as %+v, %v", s, l, l.String(), back, err)
		}
		if strings.Contains(l.ServerURL(), "@") || (l.Password != "" && strings.Contains(l.Redacted(), l.Password)) ||
			(l.Token != "" && strings.Contains(l.Redacted(), "//"+l.Token+"@")) {
			t.Fatalf("ParseLink(%q): a credential leaks into ServerURL %q or Redacted %q", s, l.ServerURL(), l.Redacted())
		}
	})
}

// FuzzReplayWindow checks that ParseReplayWindow accepts exactly the positive, representable
// windows of the SPEC §7 pattern, and that Validate agrees with it.
func FuzzReplayWindow(f *testing.F) {
	for _, s := range []string{"24h", "0s", "7d", "1w", "", "106752d", "00030m", "1h30m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseReplayWindow(s)
		cfgErr := (&ChannelConfig{ReplayWindow: s}).Validate()
		if s != "" && (err == nil) != (cfgErr == nil) {
			t.Fatalf("ParseReplayWindow(%q) = %v but Validate = %v", s, err, cfgErr)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidChannelConfig) || d != 0 {
				t.Fatalf("ParseReplayWindow(%q) = %v, %v", s, d, err)
			}
			return
		}
		n, perr := strconv.ParseUint(s[:len(s)-1], 10, 64)
		if !replayWindowPattern.MatchString(s) || perr != nil || d <= 0 || d != replayUnits[s[len(s)-1]]*time.Duration(n) {
			t.Fatalf("ParseReplayWindow(%q) = %v", s, d)
		}
	})
}

// FuzzDecodePresence checks that an accepted presence row is valid, belongs to its key and
// round-trips, and that every refusal wraps ErrInvalidPresence.
func FuzzDecodePresence(f *testing.F) {
	f.Add(vecAlice, []byte(`{"card":{"id":"`+vecAlice+`","name":"alice","kind":"agent"},"status":"idle","ts":1}`))
	f.Add(vecAlice, []byte(`{"stream":"KV_cotal_presence_main","seq":12}`))
	f.Add("k", []byte(`{"card":{"id":"k","name":"n","kind":"endpoint","meta":{"a":[1,{"b":null}]}},`+
		`"status":"offline","attention":"dnd","channelModes":{"x":"quiet"},"ts":-5}`))
	f.Fuzz(func(t *testing.T, key string, data []byte) {
		p, err := DecodePresence(key, data)
		if err != nil {
			if !errors.Is(err, ErrInvalidPresence) {
				t.Fatalf("DecodePresence error %v does not wrap ErrInvalidPresence", err)
			}
			return
		}
		if p.Card.ID != key || p.Validate() != nil || !utf8.Valid(data) {
			t.Fatalf("DecodePresence(%q, %q) accepted %+v", key, data, p)
		}
		encoded := mustMarshal(t, p)
		again, err := DecodePresence(key, encoded)
		if err != nil || !bytes.Equal(mustMarshal(t, again), encoded) {
			t.Fatalf("re-decoding %s = %+v, %v", encoded, again, err)
		}
	})
}

// FuzzDecodeACLRecord checks that an accepted ACL record holds only policy channels and
// round-trips, and that every refusal wraps ErrInvalidRecord.
func FuzzDecodeACLRecord(f *testing.F) {
	for _, s := range []string{`{"allowSubscribe":["team.>","general"],"revision":3,"updatedAt":17}`,
		`{"allowSubscribe":[],"revision":0,"updatedAt":0}`, `{"stream":"KV_cotal_acl_main","seq":9}`,
		`{"allowSubscribe":null,"revision":1,"updatedAt":1}`, `{"allowSubscribe":["a/b"],"revision":1,"updatedAt":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeACLRecord(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidRecord) {
				t.Fatalf("DecodeACLRecord error %v does not wrap ErrInvalidRecord", err)
			}
			return
		}
		for _, p := range r.AllowSubscribe {
			if ValidatePolicyChannel(p) != nil {
				t.Fatalf("DecodeACLRecord(%q) accepted pattern %q", data, p)
			}
		}
		encoded := mustMarshal(t, r)
		again, err := DecodeACLRecord(encoded)
		if err != nil || !bytes.Equal(mustMarshal(t, again), encoded) {
			t.Fatalf("re-decoding %s = %+v, %v", encoded, again, err)
		}
	})
}
