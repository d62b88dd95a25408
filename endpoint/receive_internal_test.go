package endpoint

import (
	"testing"

	"github.com/cotal-go/cotal/wire"
)

func TestSanitizeAgreesWithWire(t *testing.T) {
	for _, token := range []string{"", "UABC123", "a-b_c", "a.b", "sp ace", "ünï", "*", ">"} {
		if got, want := sanitize(token), wire.Sanitize(token); got != want {
			t.Errorf("sanitize(%q) = %q, want wire.Sanitize's %q", token, got, want)
		}
	}
}
