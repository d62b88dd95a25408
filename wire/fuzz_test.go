package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats-server/v2/server"
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
		if strings.Contains(l.ServerURL(), "@") || !redactsSecret(l) {
			t.Fatalf("ParseLink(%q): a credential leaks into ServerURL %q or Redacted %q", s, l.ServerURL(), l.Redacted())
		}
	})
}

// redactsSecret reports whether l's Redacted form carries "xxxxx" where l has a password or
// token. It reads the user info back rather than searching the string for the secret: a
// one-letter password such as "a" also occurs in "cotal".
func redactsSecret(l Link) bool {
	u, err := url.Parse(l.Redacted())
	if err != nil {
		return false
	}
	pw, hasPW := u.User.Password()
	switch {
	case l.Token != "":
		return u.User.Username() == "xxxxx" && !hasPW
	case l.Password != "":
		return pw == "xxxxx"
	}
	return true
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

// decodeSeeds are payloads on the edges of the envelope decoder: escapes and surrogates, every
// number form, repeated and case-variant keys, nulls, and nesting at encoding/json's limit.
var decodeSeeds = []string{
	`{"id":"m\u0031","ts":-0,"space":"s\/p","from":{"id":"i","name":"\ud83d\ude00\ud800x\udc00"},` +
		`"channel":"a.b","parts":[{"kind":"text","text":"\"\\\b\f\n\r\t\u2028<&>"}]}`,
	`{"id":"m","ts":1.5e3,"space":"s","from":{"id":"i","name":"n","role":""},"to":"t","mentions":[],` +
		`"parts":[],"replyTo":"r","contextId":"c","x":[{"y":[true,false,null,-1.0E+2]}]}`,
	`{"id":"m","ts":9223372036854775807,"space":"s","from":{"id":"i","name":"n"},"toService":"r","parts":[]}`,
	`{"id":"m","ts":-9223372036854775809,"space":"s","from":{"id":"i","name":"n"},"toService":"r","parts":[]}`,
	`{"id":1,"id":"m","ts":1,"space":"s","from":{"id":"i"},"from":{"id":"i","name":"n"},"to":"t","parts":[1],"parts":[]}`,
	`{"ID":"m","id":"n","ts":1,"space":"s","from":{"id":"i","Name":"n","name":"m"},"to":"t","channel":null,"parts":[]}`,
	`{"id":"m","ts":1,"space":"s","from":{"id":null,"name":"n"},"to":"t","parts":[]}`,
	`{"id":"m","ts":1,"space":"s","from":{"id":"i","name":"n","role":null},"to":"t","mentions":["a",null],"parts":[]}`,
	`{"id":"m","ts":1,"space":"s","from":{"id":"i","name":"n"},"to":"t","parts":[{"kind":"data","data": { "a" : [ 1 , "<" ] } },` +
		`{"kind":"com.acme.x","kind":"org.x.y","f":{"g":"\u2029"},"f":2},{"text":"t","kind":"text","text":"u"}]}`,
	` {"id":"m","ts":1e400,"space":"s","from":{"id":"i","name":"n"},"to":"t","parts":[]} `,
	`{"id":"m","ts":01,"space":"s"}`, `{"a":1,}`, `{"a":[1,]}`, `{"a":"\x"}`, `{"a":"\u12"}`, `{"a":tru}`,
	`{"id":"m","ts":1,"space":"s","from":{"id":"i","name":"n"},"to":"t","parts":[{"kind":"data","data":[` +
		strings.Repeat("[", 9996) + strings.Repeat("]", 9996) + `]}]}`,
	`{"id":"m","ts":1,"space":"s","from":{"id":"i","name":"n"},"to":"t","parts":[{"kind":"data","data":[` +
		strings.Repeat("[", 9997) + strings.Repeat("]", 9997) + `]}]}`,
}

// FuzzDecodeMatchesLegacy checks the single-pass decoder against the encoding/json-based
// decoder it replaced (decode_oracle_test.go): they accept and refuse the same payloads, with
// the same reason, and decode the same message, except where legacyDiverges names a fix of
// the old reading against the schema. An accepted payload validates against the schema, and
// AppendJSON writes what the old json.Marshal wrote.
func FuzzDecodeMatchesLegacy(f *testing.F) {
	for _, file := range []string{"sample-multicast.json", "sample-unicast.json"} {
		f.Add(readRepoTestdata(f, file))
	}
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	sch := compileMessageSchema(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := DecodeMessage(data)
		if err == nil {
			if err := validateAgainstSchema(sch, data); err != nil {
				t.Fatalf("DecodeMessage accepted %q, which the schema refuses: %v", data, err)
			}
			encoded, err := got.AppendJSON([]byte("prefix"))
			want, wantErr := legacyMarshalMessage(got)
			if err != nil || wantErr != nil || string(encoded) != "prefix"+string(want) {
				t.Fatalf("AppendJSON = %s, %v; the old encoding is %s, %v", encoded, err, want, wantErr)
			}
		}
		if legacyDiverges(data) {
			return
		}
		want, wantErr := legacyDecodeMessage(data)
		gotReason, _ := ReasonOf(err)
		wantReason, _ := ReasonOf(wantErr)
		if gotReason != wantReason || !reflect.DeepEqual(got, want) {
			t.Fatalf("DecodeMessage(%q)\n= %#v, %v\nthe old decoder: %#v, %v", data, got, err, want, wantErr)
		}
	})
}

// FuzzPartUnmarshalMatchesLegacy checks Part.UnmarshalJSON, called directly on any bytes, against
// the encoding/json-based one it replaced, and the hand-written extension-kind matcher against
// the schema's pattern.
func FuzzPartUnmarshalMatchesLegacy(f *testing.F) {
	for _, s := range []string{`{"kind":"text","text":"a\u00e9\ud800"}`, `{"kind":"data","data":null}`,
		`{"kind":"data"}`, `{"kind":"com.x.y","kind":"a.b","k\u0069nd":"c.d","v":[1, 2]}`, `{"kind":1}`,
		"{\"kind\":\"text\",\"text\":\"\xff\xe2\x80\"}", "{\"kind\":\"x.y\",\"\xc3\":\"\xed\xa0\x80\"}",
		`{"kind":"text","text":"x"} x`, `[]`, `null`, `com.acme.snapshot`, `a-b.c-d`, `com..acme`, `.a.b`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := isExtensionKind(string(b)), legacyExtensionKind.Match(b); got != want {
			t.Fatalf("isExtensionKind(%q) = %v, the schema's pattern says %v", b, got, want)
		}
		var got Part
		var want legacyPart
		err, wantErr := got.UnmarshalJSON(b), want.UnmarshalJSON(b)
		if (err == nil) != (wantErr == nil) || (err == nil && !reflect.DeepEqual(got, Part(want))) {
			t.Fatalf("UnmarshalJSON(%q) = %#v, %v; the old one %#v, %v", b, got, err, want, wantErr)
		}
		if err != nil && !errors.Is(err, ErrInvalidPart) {
			t.Fatalf("UnmarshalJSON(%q) error %v does not wrap ErrInvalidPart", b, err)
		}
	})
}

// FuzzAppendJSONMatchesMarshal checks that AppendJSON writes, for any message, exactly what
// the old json.Marshal wrote, failing where it failed: invalid UTF-8, HTML-sensitive and
// control characters in strings, raw data and extension values with whitespace or not JSON.
func FuzzAppendJSONMatchesMarshal(f *testing.F) {
	f.Add("m", int64(-1), "s", "i", "n", "", "a.b", "hi <&> \u2028", "com.x.y", []byte(` {"a" : [1, "<\u2029>"]} `))
	f.Add("\xff", int64(0), "\x00\x1f\"\\", "i", "", "r", "", "\xe2\x80", "image", []byte(`1 2`))
	f.Add("m", int64(7), "s", "i", "n", "", "", "", "kind", []byte{})
	f.Fuzz(func(t *testing.T, id string, ts int64, space, fromID, name, role, channel, text, kind string, raw []byte) {
		data := json.RawMessage(raw)
		if len(raw) == 0 {
			data = nil
		}
		m := &CotalMessage{ID: id, TS: ts, Space: space, From: EndpointRef{ID: fromID, Name: name, Role: role},
			Channel: channel, To: text, Mentions: []string{name, text}, ReplyTo: role, ContextID: kind,
			Parts: []Part{TextPart(text), {Kind: PartData, Data: data}, {Kind: kind, Text: text,
				Extension: map[string]json.RawMessage{"f": data, text: json.RawMessage(`"x"`), "kind": data}}}}
		got, err := m.AppendJSON(nil)
		want, wantErr := legacyMarshalMessage(m)
		if (err == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("AppendJSON = %s, %v; the old encoding is %s, %v", got, err, want, wantErr)
		}
		if viaMarshal, err := json.Marshal(m); (err == nil) != (wantErr == nil) || !bytes.Equal(viaMarshal, want) {
			t.Fatalf("json.Marshal = %s, %v; the old encoding is %s, %v", viaMarshal, err, want, wantErr)
		}
	})
}

// FuzzJSONScannerMatchesEncodingJSON checks the scanner alone against encoding/json on any
// bytes: it accepts exactly what json.Valid accepts, and reads a string value as json.Unmarshal
// does, invalid UTF-8 and unpaired surrogates included.
func FuzzJSONScannerMatchesEncodingJSON(f *testing.F) {
	for _, s := range append([]string{`"a\u00e9\ud83d\ude00\ud800\u0041\udc00"`, "\"\xff\xe2\x80\"",
		` [1, -0.5e+3, true, {"a": null}] `, `null`, `{"a":1,}`, `01`, `"\/\b"`, `1 2`, ``}, decodeSeeds...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s := jsonScanner{data: b}
		err := s.skip()
		if err == nil {
			err = s.end()
		}
		if (err == nil) != json.Valid(b) {
			t.Fatalf("scanning %q = %v, json.Valid = %v", b, err, json.Valid(b))
		}
		var want string
		if s = (jsonScanner{data: b}); s.ws() != '"' || json.Unmarshal(b, &want) != nil {
			return
		}
		got, err := s.string()
		if err != nil || string(got) != want {
			t.Fatalf("string of %q = %q, %v; json.Unmarshal reads %q", b, got, err, want)
		}
	})
}

// FuzzSubjectMatches: on valid subjects and filters SubjectMatches agrees with nats-server's
// own matcher, which routes the copies the Endpoint judges by it.
func FuzzSubjectMatches(f *testing.F) {
	for _, c := range [][2]string{
		{"cotal.main.chat.*.general", "cotal.main.chat.bob.general"},
		{"cotal.main.chat.*.team.>", "cotal.main.chat.bob.team.a.b"},
		{"cotal.main.chat.*.team.>", "cotal.main.chat.bob.team"},
		{"cotal.main.chat.*.team.secret", "cotal.main.chat.bob.general"},
		{">", "a"}, {"a.*", "a"}, {"a", "a.b"},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, filter, subject string) {
		if !server.IsValidSubject(filter) || !server.IsValidLiteralSubject(subject) || strings.Contains(subject, "*") {
			return
		}
		for tok := range strings.SplitSeq(filter, ".") {
			if tok != "*" && tok != ">" && strings.ContainsAny(tok, "*>") {
				return // nats-server takes a token that starts with a wildcard character for one
			}
		}
		if got, want := SubjectMatches(filter, subject), server.SubjectMatchesFilter(subject, filter); got != want {
			t.Fatalf("SubjectMatches(%q, %q) = %v, nats-server says %v", filter, subject, got, want)
		}
	})
}
