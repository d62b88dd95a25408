package wire

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestPartKinds(t *testing.T) {
	tests := []struct {
		kind      string
		extension bool
		valid     bool
	}{
		{"text", false, true},
		{"data", false, true},
		{"com.acme.snapshot", true, true},
		{"ai.cotal.trace", true, true},
		{"a-b.c-d", true, true},
		{"image", false, false},
		{"", false, false},
		{"com..acme", false, false},
		{"com.acme.", false, false},
		{"com.acme_x.snapshot", false, false},
		{"com.acme/x", false, false},
	}
	for _, tt := range tests {
		t.Run("kind "+tt.kind, func(t *testing.T) {
			p := Part{Kind: tt.kind}
			if got := p.IsExtension(); got != tt.extension {
				t.Errorf("IsExtension = %v, want %v", got, tt.extension)
			}
			err := p.Validate()
			if (err == nil) != tt.valid {
				t.Errorf("Validate = %v, want valid = %v", err, tt.valid)
			}
			if err != nil && !errors.Is(err, ErrInvalidPart) {
				t.Errorf("error %v does not wrap ErrInvalidPart", err)
			}
		})
	}
}

func TestPartJSONKeepsExactlyTheFieldsOfItsKind(t *testing.T) {
	data, err := DataPart(map[string]int{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	ext, err := ExtensionPart("com.acme.snapshot", map[string]any{"url": "https://x", "size": 3})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		part Part
		want string
	}{
		{"a text part", TextPart("hi"), `{"kind":"text","text":"hi"}`},
		{"an empty text part keeps its text field", TextPart(""), `{"kind":"text","text":""}`},
		{"a data part", data, `{"kind":"data","data":{"n":1}}`},
		{"a data part without data encodes null", Part{Kind: PartData}, `{"kind":"data","data":null}`},
		{"an extension part keeps its fields", ext, `{"kind":"com.acme.snapshot","size":3,"url":"https://x"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.part)
			if err != nil || string(got) != tt.want {
				t.Fatalf("Marshal = %s, %v; want %s", got, err, tt.want)
			}
			var back Part
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatalf("Unmarshal(%s): %v", got, err)
			}
			again, err := json.Marshal(back)
			if err != nil || string(again) != tt.want {
				t.Fatalf("round trip = %s, %v; want %s", again, err, tt.want)
			}
		})
	}
}

func TestPartDecodingRefusesMalformedCoreParts(t *testing.T) {
	tests := []struct{ name, json string }{
		{"a part that is not an object", `"text"`},
		{"a null part", `null`},
		{"a part without kind", `{"text":"x"}`},
		{"a numeric kind", `{"kind":1}`},
		{"a null kind", `{"kind":null}`},
		{"a text part without text", `{"kind":"text"}`},
		{"a text part with null text", `{"kind":"text","text":null}`},
		{"a text part with numeric text", `{"kind":"text","text":1}`},
		{"a data part without data", `{"kind":"data"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Part
			if err := json.Unmarshal([]byte(tt.json), &p); err == nil {
				t.Fatalf("Unmarshal(%s) = %+v, want an error", tt.json, p)
			}
		})
	}
}

func TestPartValidateRefusesFieldsOfAnotherKind(t *testing.T) {
	tests := []struct {
		name string
		part Part
	}{
		{"a text part with data", Part{Kind: PartText, Text: "x", Data: json.RawMessage(`1`)}},
		{"a data part with text", Part{Kind: PartData, Text: "x"}},
		{"a data part with invalid JSON", Part{Kind: PartData, Data: json.RawMessage(`{`)}},
		{"an extension part with text", Part{Kind: "com.acme.x", Text: "x"}},
		{"an extension part with a second kind", Part{Kind: "com.acme.x",
			Extension: map[string]json.RawMessage{"kind": json.RawMessage(`"text"`)}}},
		{"an extension field with invalid JSON", Part{Kind: "com.acme.x",
			Extension: map[string]json.RawMessage{"a": json.RawMessage(`{`)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.part.Validate(); !errors.Is(err, ErrInvalidPart) {
				t.Fatalf("Validate = %v, want ErrInvalidPart", err)
			}
		})
	}
}

func TestExtensionPartRefusesABareKindAndAKindField(t *testing.T) {
	if _, err := ExtensionPart("image", nil); !errors.Is(err, ErrInvalidPart) {
		t.Errorf("ExtensionPart(image) = %v, want ErrInvalidPart", err)
	}
	if _, err := ExtensionPart("com.acme.x", map[string]any{"kind": "y"}); !errors.Is(err, ErrInvalidPart) {
		t.Errorf("ExtensionPart with a kind field = %v, want ErrInvalidPart", err)
	}
	if _, err := ExtensionPart("com.acme.x", map[string]any{"f": func() {}}); err == nil {
		t.Error("ExtensionPart with an unencodable field succeeded")
	}
	if _, err := DataPart(make(chan int)); err == nil {
		t.Error("DataPart with an unencodable value succeeded")
	}
}
