package wire

import (
	"fmt"
	"testing"
	"time"
)

func TestRequestLogServesARequestOnce(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name          string
		sender, id    string
		at            time.Time
		wantDuplicate bool
	}{
		{"first copy", "alice", "r1", now, false},
		{"second copy", "alice", "r1", now.Add(time.Millisecond), true},
		{"same id of another sender", "bob", "r1", now, false},
		{"no id is never a duplicate", "alice", "", now, false},
		{"no id twice", "alice", "", now, false},
		{"after the window", "alice", "r1", now.Add(requestLogWindow + time.Second), false},
	}
	var l RequestLog
	for _, tt := range tests {
		if got := l.Duplicate(tt.sender, tt.id, tt.at); got != tt.wantDuplicate {
			t.Errorf("%s: duplicate = %v, want %v", tt.name, got, tt.wantDuplicate)
		}
	}
}

func TestRequestLogIsBounded(t *testing.T) {
	var l RequestLog
	now := time.Now()
	for i := range requestLogSize + 10 {
		l.Duplicate("alice", fmt.Sprint(i), now)
	}
	if len(l.seen) != requestLogSize || len(l.order) != requestLogSize {
		t.Fatalf("remembers %d ids (%d in order), want %d", len(l.seen), len(l.order), requestLogSize)
	}
	if l.Duplicate("alice", "0", now) {
		t.Error("the oldest id is still remembered past the bound")
	}
}
