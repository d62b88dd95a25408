package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space/spacetest"
)

// TestMCPToolErrorsShowNoControlCharacters calls tools whose error text quotes what they were
// given: the text reaches the model with every control, bidi and zero-width character escaped.
func TestMCPToolErrorsShowNoControlCharacters(t *testing.T) {
	m := spacetest.New(t)
	general := []string{"general"}
	alice := newAgent(t, m, "alice", provisioner.Grants{Subscribe: general, AllowPublish: general})
	const hostile = "gen\x1b]0;owned\x07\u009b\u202e\u200beral"
	for _, tc := range []struct {
		name string
		tool string
		args map[string]any
	}{
		{"a history of a malformed channel", "cotal_history", map[string]any{"channel": hostile}},
		{"a leave of a channel not joined", "cotal_leave", map[string]any{"channel": hostile}},
		{"a send on a malformed channel", "cotal_send", map[string]any{"channel": hostile, "text": "hi"}},
	} {
		t.Run(tc.name+" answers the channel escaped", func(t *testing.T) {
			res := alice.call(t, tc.tool, tc.args)
			got := text(res)
			if !res.IsError {
				t.Fatalf("%s: result %q, want an error", tc.tool, got)
			}
			for _, raw := range []string{"\x1b", "\x07", "\u009b", "\u202e", "\u200b"} {
				if strings.Contains(got, raw) {
					t.Errorf("%s: the error %q holds %q raw", tc.tool, got, raw)
				}
			}
			if want := `gen\x1b]0;owned\a\u009b\u202e\u200beral`; !strings.Contains(got, want) {
				t.Errorf("%s: the error %q does not show %s", tc.tool, got, want)
			}
		})
	}
}
