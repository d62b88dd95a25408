package wire

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// compileMessageSchema compiles the authoritative SPEC §5 schema (draft-07) from testdata.
func compileMessageSchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("..", "testdata", "cotal.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	sch, err := jsonschema.NewCompiler().Compile(path)
	if err != nil {
		t.Fatalf("compile cotal.schema.json: %v", err)
	}
	return sch
}

func validateAgainstSchema(sch *jsonschema.Schema, payload []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(payload))
	if err != nil {
		return err
	}
	return sch.Validate(inst)
}

func TestEveryMessageThePackageEmitsValidatesAgainstTheSchema(t *testing.T) {
	sch := compileMessageSchema(t)
	data, err := DataPart(map[string]any{"files": []string{"a.go"}, "ok": true})
	if err != nil {
		t.Fatal(err)
	}
	nullData, err := DataPart(nil)
	if err != nil {
		t.Fatal(err)
	}
	ext, err := ExtensionPart("com.acme.snapshot", map[string]any{"url": "https://x/y", "bytes": 42})
	if err != nil {
		t.Fatal(err)
	}
	multi := NewChannelMessage("main", vecFrom, "team.backend", TextPart("Can you review this?"))
	multi.Mentions = NormalizeMentions([]string{"Bob", "carol"})
	multi.ReplyTo, multi.ContextID = NewMessageID(), "ctx-1"
	tests := []struct {
		name string
		msg  *CotalMessage
	}{
		{"a multicast with mentions, replyTo and contextId", multi},
		{"a unicast", NewDirectMessage("main", EndpointRef{ID: vecAlice, Name: "alice"}, vecBob, TextPart("Direct note."))},
		{"an anycast", NewServiceMessage("main", vecFrom, "reviewer", TextPart("please review"))},
		{"a message with a data part", NewChannelMessage("main", vecFrom, "ci", data)},
		{"a message with a null data part", NewChannelMessage("main", vecFrom, "ci", nullData)},
		{"a message with an extension part", NewDirectMessage("main", vecFrom, vecBob, ext, TextPart(""))},
		{"a message without parts", NewServiceMessage("main", vecFrom, "reviewer")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.msg.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			payload := mustMarshal(t, tt.msg)
			if err := validateAgainstSchema(sch, payload); err != nil {
				t.Fatalf("%s\ndoes not validate: %v", payload, err)
			}
		})
	}
}

func TestTheSpecSamplesValidateAgainstTheSchema(t *testing.T) {
	sch := compileMessageSchema(t)
	for _, file := range []string{"sample-multicast.json", "sample-unicast.json"} {
		t.Run(file, func(t *testing.T) {
			if err := validateAgainstSchema(sch, readRepoTestdata(t, file)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestDecodeMessageAgreesWithTheSchemaOnShape feeds payloads that differ only in shape and
// checks that DecodeMessage accepts exactly those the schema accepts.
func TestDecodeMessageAgreesWithTheSchemaOnShape(t *testing.T) {
	sch := compileMessageSchema(t)
	part := func(kv ...any) []any {
		p := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			p[kv[i].(string)] = kv[i+1]
		}
		return []any{p}
	}
	tests := []struct {
		name  string
		edits map[string]any
	}{
		{"the base multicast", nil},
		{"a unicast", map[string]any{"channel": nil, "to": vecBob}},
		{"an anycast", map[string]any{"channel": nil, "toService": "reviewer"}},
		{"channel and to", map[string]any{"to": vecBob}},
		{"to and toService", map[string]any{"channel": nil, "to": vecBob, "toService": "r"}},
		{"no routing field", map[string]any{"channel": nil}},
		{"no from", map[string]any{"from": nil}},
		{"no parts", map[string]any{"parts": nil}},
		{"no ts", map[string]any{"ts": nil}},
		{"a string ts", map[string]any{"ts": "1"}},
		{"a from without name", map[string]any{"from": map[string]any{"id": vecAlice}}},
		{"a data part", map[string]any{"parts": part("kind", "data", "data", []int{1})}},
		{"a data part without data", map[string]any{"parts": part("kind", "data")}},
		{"a text part without text", map[string]any{"parts": part("kind", "text")}},
		{"a bare image part", map[string]any{"parts": part("kind", "image")}},
		{"an extension part", map[string]any{"parts": part("kind", "com.acme.x", "a", 1)}},
		{"a single-label extension kind", map[string]any{"parts": part("kind", "acme")}},
		{"numeric mentions", map[string]any{"mentions": []int{1}}},
		{"string mentions", map[string]any{"mentions": []string{"bob"}}},
		{"unknown fields", map[string]any{"future": map[string]any{"x": 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			payload := msgJSON(t, tt.edits)
			schemaErr := validateAgainstSchema(sch, payload)
			_, decodeErr := DecodeMessage(payload)
			if (schemaErr == nil) != (decodeErr == nil) {
				t.Fatalf("%s\nschema: %v\nDecodeMessage: %v", payload, schemaErr, decodeErr)
			}
		})
	}
}
