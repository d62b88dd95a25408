package wire

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
)

var vecFrom = EndpointRef{ID: vecAlice, Name: "alice", Role: "planner"}

func TestDecodeMessageReadsTheSpecSamples(t *testing.T) {
	tests := []struct {
		file string
		want CotalMessage
	}{
		{"sample-multicast.json", CotalMessage{
			ID: "018f1d0a-0000-7000-9000-000000000001", TS: 1710000000000, Space: "main",
			From: vecFrom, Channel: "team.backend", Mentions: []string{"bob"},
			Parts: []Part{TextPart("Can you review this?")}, ContextID: "ctx-1",
		}},
		{"sample-unicast.json", CotalMessage{
			ID: "018f1d0a-0000-7000-9000-000000000002", TS: 1710000001000, Space: "main",
			From: EndpointRef{ID: vecAlice, Name: "alice"}, To: vecBob,
			Parts: []Part{TextPart("Direct note.")},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := DecodeMessage(readRepoTestdata(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Fatalf("DecodeMessage =\n%+v\nwant\n%+v", *got, tt.want)
			}
		})
	}
}

func TestConstructedMessagesRoundTrip(t *testing.T) {
	data, err := DataPart([]int{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	multi := NewChannelMessage("main", vecFrom, "team.backend", TextPart("hi"), data)
	multi.Mentions, multi.ReplyTo, multi.ContextID = []string{"bob"}, NewMessageID(), "ctx-1"
	for _, m := range []*CotalMessage{
		multi,
		NewDirectMessage("main", vecFrom, vecBob, TextPart("dm")),
		NewServiceMessage("main", vecFrom, "reviewer"),
	} {
		t.Run(string(mustMarshal(t, m)), func(t *testing.T) {
			if err := m.Validate(); err != nil {
				t.Fatal(err)
			}
			got, err := DecodeMessage(mustMarshal(t, m))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(mustMarshal(t, got), mustMarshal(t, m)) {
				t.Fatalf("round trip changed the message:\n%s\n%s", mustMarshal(t, got), mustMarshal(t, m))
			}
		})
	}
}

func TestMessageJSONOmitsEmptyOptionalFields(t *testing.T) {
	m := NewDirectMessage("main", EndpointRef{ID: vecAlice, Name: "alice"}, vecBob)
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(mustMarshal(t, m), &obj); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"from", "id", "parts", "space", "to", "ts"}; !slices.Equal(keys, want) {
		t.Errorf("keys = %v, want %v", keys, want)
	}
	if string(obj["parts"]) != "[]" {
		t.Errorf("parts = %s, want []", obj["parts"])
	}
	if strings.Contains(string(obj["from"]), "role") {
		t.Errorf("from = %s carries an empty role", obj["from"])
	}
}

func TestMessageValidate(t *testing.T) {
	valid := func() *CotalMessage { return NewChannelMessage("main", vecFrom, "team.backend", TextPart("x")) }
	tests := []struct {
		name   string
		mutate func(*CotalMessage)
		ok     bool
	}{
		{"a constructed multicast is valid", func(*CotalMessage) {}, true},
		{"no parts is valid", func(m *CotalMessage) { m.Parts = nil }, true},
		{"an extension part is valid", func(m *CotalMessage) { m.Parts = []Part{{Kind: "com.acme.x"}} }, true},
		{"an empty id is refused", func(m *CotalMessage) { m.ID = "" }, false},
		{"an empty space is refused", func(m *CotalMessage) { m.Space = "" }, false},
		{"an empty from.id is refused", func(m *CotalMessage) { m.From.ID = "" }, false},
		{"no routing field is refused", func(m *CotalMessage) { m.Channel = "" }, false},
		{"two routing fields are refused", func(m *CotalMessage) { m.To = vecBob }, false},
		{"three routing fields are refused", func(m *CotalMessage) { m.To, m.ToService = vecBob, "r" }, false},
		{"a wildcard channel is refused", func(m *CotalMessage) { m.Channel = "team.>" }, false},
		{"a malformed channel is refused", func(m *CotalMessage) { m.Channel = "team..a" }, false},
		{"a bare unknown part kind is refused", func(m *CotalMessage) { m.Parts = []Part{{Kind: "image"}} }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := valid()
			tt.mutate(m)
			err := m.Validate()
			if (err == nil) != tt.ok {
				t.Fatalf("Validate = %v, want ok = %v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidMessage) {
				t.Fatalf("error %v does not wrap ErrInvalidMessage", err)
			}
		})
	}
}

// msgJSON returns a valid multicast payload with the top-level fields in edits replaced
// (a nil value deletes the field).
func msgJSON(t *testing.T, edits map[string]any) []byte {
	t.Helper()
	obj := map[string]any{
		"id": "m1", "ts": 1710000000000, "space": "main",
		"from":    map[string]any{"id": vecAlice, "name": "alice"},
		"channel": "team.backend",
		"parts":   []any{map[string]any{"kind": "text", "text": "x"}},
	}
	for k, v := range edits {
		if v == nil {
			delete(obj, k)
		} else {
			obj[k] = v
		}
	}
	return mustMarshal(t, obj)
}

func TestDecodeMessageClassifiesEveryRejection(t *testing.T) {
	const ok = ""
	tests := []struct {
		name    string
		payload []byte
		reason  string
	}{
		{"a valid payload decodes", msgJSON(t, nil), ok},
		{"unknown fields are ignored", msgJSON(t, map[string]any{"x-future": []int{1}}), ok},
		{"an unknown extension part is kept", msgJSON(t, map[string]any{
			"parts": []any{map[string]any{"kind": "com.acme.x", "v": 1}}}), ok},
		{"a fractional ts is truncated", msgJSON(t, map[string]any{"ts": 1.5}), ok},
		{"empty parts decode", msgJSON(t, map[string]any{"parts": []any{}}), ok},
		{"invalid UTF-8 is malformed", []byte("{\"id\":\"\xff\"}"), ReasonMalformedJSON},
		{"a truncated object is malformed", []byte(`{"id":`), ReasonMalformedJSON},
		{"an empty payload is malformed", []byte{}, ReasonMalformedJSON},
		{"an array is malformed", []byte(`[1]`), ReasonMalformedJSON},
		{"a null is malformed", []byte(`null`), ReasonMalformedJSON},
		{"a string is malformed", []byte(`"x"`), ReasonMalformedJSON},
		{"trailing garbage is malformed", append(msgJSON(t, nil), '}'), ReasonMalformedJSON},
		{"a missing from is a sender mismatch", msgJSON(t, map[string]any{"from": nil}), ReasonSenderMismatch},
		{"a from without id is a sender mismatch", msgJSON(t, map[string]any{
			"from": map[string]any{"name": "alice"}}), ReasonSenderMismatch},
		{"an empty from.id is a sender mismatch", msgJSON(t, map[string]any{
			"from": map[string]any{"id": "", "name": "alice"}}), ReasonSenderMismatch},
		{"a string from is malformed", msgJSON(t, map[string]any{"from": "alice"}), ReasonMalformedJSON},
		{"a from without name is malformed", msgJSON(t, map[string]any{
			"from": map[string]any{"id": vecAlice}}), ReasonMalformedJSON},
		{"a missing id is malformed", msgJSON(t, map[string]any{"id": nil}), ReasonMalformedJSON},
		{"an empty id is malformed", msgJSON(t, map[string]any{"id": ""}), ReasonMalformedJSON},
		{"a missing ts is malformed", msgJSON(t, map[string]any{"ts": nil}), ReasonMalformedJSON},
		{"a string ts is malformed", msgJSON(t, map[string]any{"ts": "1710000000000"}), ReasonMalformedJSON},
		{"an out-of-range ts is malformed", msgJSON(t, map[string]any{"ts": 1e300}), ReasonMalformedJSON},
		{"a missing space is malformed", msgJSON(t, map[string]any{"space": nil}), ReasonMalformedJSON},
		{"a missing parts is malformed", msgJSON(t, map[string]any{"parts": nil}), ReasonMalformedJSON},
		{"an object parts is malformed", msgJSON(t, map[string]any{"parts": map[string]any{}}), ReasonMalformedJSON},
		{"a bare unknown part kind is malformed", msgJSON(t, map[string]any{
			"parts": []any{map[string]any{"kind": "image", "url": "x"}}}), ReasonMalformedJSON},
		{"a text part without text is malformed", msgJSON(t, map[string]any{
			"parts": []any{map[string]any{"kind": "text"}}}), ReasonMalformedJSON},
		{"no routing field is malformed", msgJSON(t, map[string]any{"channel": nil}), ReasonMalformedJSON},
		{"an empty second routing field is malformed", msgJSON(t, map[string]any{"to": ""}), ReasonMalformedJSON},
		{"a wildcard channel is malformed", msgJSON(t, map[string]any{"channel": "team.*"}), ReasonMalformedJSON},
		{"numeric mentions are malformed", msgJSON(t, map[string]any{"mentions": []int{1}}), ReasonMalformedJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := DecodeMessage(tt.payload)
			reason, isAnomaly := ReasonOf(err)
			switch {
			case tt.reason == ok && err != nil:
				t.Fatalf("DecodeMessage(%s) = %v, want a message", tt.payload, err)
			case tt.reason == ok && m == nil:
				t.Fatal("DecodeMessage returned neither a message nor an error")
			case tt.reason != ok && (!isAnomaly || reason != tt.reason):
				t.Fatalf("DecodeMessage(%s) = %+v, %v; want reason %s", tt.payload, m, err, tt.reason)
			}
		})
	}
}

func TestNormalizeMentions(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"nil stays nil", nil, nil},
		{"only blanks become nil", []string{"", "  "}, nil},
		{"names are trimmed and lowercased", []string{" Bob ", "CAROL"}, []string{"bob", "carol"}},
		{"duplicates keep the first position", []string{"bob", "alice", "BOB", "alice "}, []string{"bob", "alice"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NormalizeMentions(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("NormalizeMentions(%q) = %#v, want %#v", tt.in, got, tt.want)
			}
		})
	}
}

func TestNewMessageIDIsAFreshUUIDv7(t *testing.T) {
	a, b := NewMessageID(), NewMessageID()
	for _, id := range []string{a, b} {
		u, err := uuid.Parse(id)
		if err != nil || u.Version() != 7 {
			t.Fatalf("NewMessageID = %q (%v), want a UUIDv7", id, err)
		}
	}
	if a == b {
		t.Fatalf("two ids are both %q", a)
	}
}

func TestCheckDelivery(t *testing.T) {
	n := NewNames("main")
	good := msgJSON(t, nil)
	tests := []struct {
		name    string
		subject string
		payload []byte
		reason  string
		kind    Kind
	}{
		{"a multicast from its sender passes", n.ChatSubject(vecAlice, "team.backend"), good, "", KindChat},
		{"a unicast from its sender passes", n.InstSubject(vecBob, vecAlice),
			readRepoTestdata(t, "sample-unicast.json"), "", KindInst},
		{"an anycast from its sender passes", n.SvcSubject("reviewer", vecAlice), good, "", KindSvc},
		{"payload routing is advisory, so a chat subject may carry a to", n.ChatSubject(vecAlice, "x"),
			readRepoTestdata(t, "sample-unicast.json"), "", KindChat},
		{"a control subject is not a delivery", n.CtlSubject("manager", vecAlice), good, ReasonMalformedSubject, ""},
		{"a chat subject without channel is malformed", "cotal.main.chat." + vecAlice, good, ReasonMalformedSubject, ""},
		{"another sender's subject is a sender mismatch", n.ChatSubject(vecBob, "team.backend"), good,
			ReasonSenderMismatch, KindChat},
		{"a spoofed unicast is a sender mismatch", n.InstSubject(vecAlice, vecBob), good, ReasonSenderMismatch, KindInst},
		{"a missing from is a sender mismatch", n.ChatSubject(vecAlice, "x"), msgJSON(t, map[string]any{"from": nil}),
			ReasonSenderMismatch, KindChat},
		{"garbage is malformed JSON", n.ChatSubject(vecAlice, "x"), []byte("not json"), ReasonMalformedJSON, KindChat},
		{"a PubAck has no sender", n.InstSubject(vecBob, vecAlice), []byte(`{"stream":"DM_main","seq":7}`),
			ReasonSenderMismatch, KindInst},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub, m, err := CheckDelivery(tt.subject, tt.payload)
			if sub.Kind != tt.kind {
				t.Errorf("subject kind = %q, want %q", sub.Kind, tt.kind)
			}
			if tt.reason == "" {
				if err != nil || m == nil {
					t.Fatalf("CheckDelivery = %v, %v; want a message", m, err)
				}
				return
			}
			if reason, _ := ReasonOf(err); reason != tt.reason || m != nil {
				t.Fatalf("CheckDelivery = %v, %v; want reason %s", m, err, tt.reason)
			}
			if !strings.HasPrefix(err.Error(), tt.reason+": ") {
				t.Fatalf("error %q does not start with its reason token", err)
			}
		})
	}
}

func TestCheckDeliveryComparesTheSanitizedSender(t *testing.T) {
	from := EndpointRef{ID: "dev.alice", Name: "alice"}
	m := NewChannelMessage("main", from, "general", TextPart("x"))
	subject := NewNames("main").ChatSubject(from.ID, "general")
	if _, got, err := CheckDelivery(subject, mustMarshal(t, m)); err != nil || got.From.ID != "dev.alice" {
		t.Fatalf("CheckDelivery = %v, %v; want the open-mode sender dev.alice accepted", got, err)
	}
}

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDecodeMessageReadsKeysAsTheSchemaDoes covers where the encoding/json-based decoder read
// a payload otherwise than the schema: it matched keys without regard to case, merged or
// failed on a repeated key whose last value the schema takes, and read a null string or
// mention as absent. DecodeMessage now accepts exactly what the schema accepts there.
func TestDecodeMessageReadsKeysAsTheSchemaDoes(t *testing.T) {
	sch := compileMessageSchema(t)
	const from, parts = `"from":{"id":"` + vecAlice + `","name":"alice"}`, `"parts":[{"kind":"text","text":"x"}]`
	base := `"id":"m1","ts":1,"space":"main",` + from + `,` + parts
	tests := []struct {
		name    string
		payload string
		reason  string
	}{
		{"a key in another case is an unknown field", `{"ID":"m1","ts":1,"space":"main",` + from + `,"channel":"c",` + parts + `}`, ReasonMalformedJSON},
		{"a routing key in another case is not routing", `{` + base + `,"Channel":"c"}`, ReasonMalformedJSON},
		{"of a repeated key the last value counts", `{"id":1,` + base + `,"channel":"c"}`, ""},
		{"a repeated from replaces the earlier one whole", `{` + base + `,"from":{"name":"bob"},"channel":"c"}`, ReasonSenderMismatch},
		{"a repeated parts replaces an earlier wrong one", `{"parts":[{"kind":1}],` + base + `,"channel":"c"}`, ""},
		{"a repeated part key takes the last value", `{` + base + `,"channel":"c","parts":[{"kind":"text","text":1,"text":"y"}]}`, ""},
		{"a null routing field is not absent", `{` + base + `,"channel":"c","to":null}`, ReasonMalformedJSON},
		{"a null optional string is refused", `{` + base + `,"channel":"c","replyTo":null}`, ReasonMalformedJSON},
		{"null mentions are refused", `{` + base + `,"channel":"c","mentions":null}`, ReasonMalformedJSON},
		{"a null mention is refused", `{` + base + `,"channel":"c","mentions":["bob",null]}`, ReasonMalformedJSON},
		{"a null role is refused", `{"id":"m1","ts":1,"space":"main","from":{"id":"a","name":"a","role":null},"channel":"c",` + parts + `}`, ReasonMalformedJSON},
		{"a null from.id is still a sender mismatch", `{"id":"m1","ts":1,"space":"main","from":{"id":null,"name":"a"},"channel":"c",` + parts + `}`, ReasonSenderMismatch},
		{"an escaped key is read unescaped", `{` + base + `,"ch\u0061nnel":"c"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := DecodeMessage([]byte(tt.payload))
			reason, _ := ReasonOf(err)
			if reason != tt.reason || (err == nil) != (m != nil) {
				t.Fatalf("DecodeMessage(%s) = %+v, %v; want reason %q", tt.payload, m, err, tt.reason)
			}
			if schemaErr := validateAgainstSchema(sch, []byte(tt.payload)); (schemaErr == nil) != (err == nil) {
				t.Fatalf("DecodeMessage(%s) = %v but the schema says %v", tt.payload, err, schemaErr)
			}
		})
	}
}

func TestDecodeMessageKeepsNothingOfTheInputBuffer(t *testing.T) {
	data := readRepoTestdata(t, "sample-multicast.json")
	m, err := DecodeMessage(data)
	if err != nil {
		t.Fatal(err)
	}
	want := mustMarshal(t, m)
	for i := range data {
		data[i] = ' '
	}
	if got := mustMarshal(t, m); !slices.Equal(got, want) {
		t.Fatalf("overwriting the payload changed the decoded message:\n%s\nwas\n%s", got, want)
	}
}

func TestDecodeMessageRefusesNestingBeyondTheLimit(t *testing.T) {
	payload := func(depth int) []byte {
		return msgJSON(t, map[string]any{"x": json.RawMessage(strings.Repeat("[", depth) + strings.Repeat("]", depth))})
	}
	if _, err := DecodeMessage(payload(maxJSONDepth - 1)); err != nil {
		t.Fatalf("nesting to the limit: %v", err)
	}
	if reason, _ := ReasonOf(func() error { _, err := DecodeMessage(payload(maxJSONDepth)); return err }()); reason != ReasonMalformedJSON {
		t.Fatalf("nesting beyond the limit: reason %q, want %s", reason, ReasonMalformedJSON)
	}
}

func TestAppendJSONAppendsToTheBufferItIsGiven(t *testing.T) {
	m := NewChannelMessage("main", vecFrom, "team.backend", TextPart("hi"))
	buf := []byte("head:")
	for range 3 {
		out, err := m.AppendJSON(buf[:5])
		if err != nil {
			t.Fatal(err)
		}
		if want := "head:" + string(mustMarshal(t, m)); string(out) != want {
			t.Fatalf("AppendJSON = %s, want %s", out, want)
		}
		buf = out
	}
	bad := NewChannelMessage("main", vecFrom, "c", Part{Kind: PartData, Data: json.RawMessage(`{`)})
	if out, err := bad.AppendJSON(buf[:5]); !errors.Is(err, ErrInvalidPart) || string(out) != "head:" {
		t.Fatalf("AppendJSON of invalid data = %q, %v; want head: and ErrInvalidPart", out, err)
	}
}
