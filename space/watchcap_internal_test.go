package space

import (
	"slices"
	"testing"
)

func TestPastCapDeletesUnreadWatchesFirst(t *testing.T) {
	tests := []struct {
		name  string
		held  []string
		inUse map[string]bool
		limit int
		want  []string
	}{
		{"under the cap, nothing", []string{"a", "b"}, nil, 2, nil},
		{"all unread: the oldest go", []string{"a", "b", "c"}, nil, 1, []string{"a", "b"}},
		{"a restarted client keeps its new, read watch", []string{"a", "b", "c"}, map[string]bool{"c": true}, 1, []string{"a", "b"}},
		{"unread go before older read ones", []string{"a", "b", "c"}, map[string]bool{"a": true}, 2, []string{"b"}},
		{"then the oldest of the read ones", []string{"a", "b", "c"}, map[string]bool{"a": true, "b": true, "c": true}, 1, []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pastCap(tt.held, tt.inUse, tt.limit); !slices.Equal(got, tt.want) {
				t.Fatalf("pastCap = %q, want %q", got, tt.want)
			}
		})
	}
}
