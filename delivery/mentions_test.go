package delivery

import (
	"testing"

	"github.com/cotal-go/cotal/wire"
)

func TestMayMention(t *testing.T) {
	tests := []struct {
		name string
		data string
		want bool
	}{
		{"a message without the key may not mention", `{"id":"a","parts":[{"kind":"text","text":"hi"}]}`, false},
		{"the key mentions may mention", `{"id":"a","mentions":["bob"],"parts":[]}`, true},
		{"a key spelled with an escape may mention", `{"id":"a","ment\u0069ons":["bob"],"parts":[]}`, true},
		{"the word in a text is read conservatively", `{"parts":[{"kind":"text","text":"\"mentions\""}]}`, true},
		{"the bare word without quotes is not the key", `{"parts":[{"kind":"text","text":"no mentions"}]}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mayMention([]byte(tt.data)); got != tt.want {
				t.Errorf("mayMention(%s) = %v, want %v", tt.data, got, tt.want)
			}
		})
	}
}

// FuzzMayMention: whatever the decoder reads mentions from, mayMention lets through.
func FuzzMayMention(f *testing.F) {
	f.Add([]byte(`{"id":"a","ts":1,"space":"s","from":{"id":"x","name":"x"},"channel":"c","mentions":["bob"],"parts":[]}`))
	f.Add([]byte(`{"id":"a","ts":1,"space":"s","from":{"id":"x","name":"x"},"channel":"c","ment\u0069ons":["bob"],"parts":[]}`))
	f.Add([]byte(`{"id":"a","ts":1,"space":"s","from":{"id":"x","name":"x"},"channel":"c","parts":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := wire.DecodeMessage(data)
		if err == nil && len(m.Mentions) > 0 && !mayMention(data) {
			t.Fatalf("mayMention(%q) = false, but it decodes with mentions %v", data, m.Mentions)
		}
	})
}
