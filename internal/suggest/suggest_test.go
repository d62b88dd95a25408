package suggest

import (
	"slices"
	"testing"
)

func TestClose(t *testing.T) {
	for _, c := range []struct {
		name       string
		word       string
		candidates []string
		want       []string
	}{
		{"a dropped letter matches", "genral", []string{"general", "random"}, []string{"general"}},
		{"case does not matter", "General", []string{"general"}, []string{"general"}},
		{"a far word matches nothing", "zzz", []string{"general"}, []string{}},
		{"closest comes first", "alert", []string{"alert-ops", "alerts"}, []string{"alerts", "alert-ops"}},
		{"a prefix matches", "team", []string{"team.backend"}, []string{"team.backend"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Close(c.word, c.candidates); !slices.Equal(got, c.want) {
				t.Fatalf("Close(%q, %q) = %q, want %q", c.word, c.candidates, got, c.want)
			}
		})
	}
}
