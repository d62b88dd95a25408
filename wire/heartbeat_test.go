package wire

import (
	"fmt"
	"testing"
)

func TestLocateTSRefusesAmbiguousRows(t *testing.T) {
	tests := []struct {
		value string
		ok    bool
	}{
		{`{"card":{},"ts":12}`, true},
		{`{"card":{},"ts" : 12 }`, true},
		{`{"card":{"name":"ts"},"ts":12}`, false},
		{`{"card":{},"TS":1,"ts":12}`, false},
		{`{"card":{"name":"a\"ts\":1"},"ts":12}`, false},
		{`{"card":{},"ts":012}`, false},
		{`{"card":{},"ts":12.5}`, true}, // the digits end at the dot; the suffix keeps ".5"
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s is found %v", tt.value, tt.ok), func(t *testing.T) {
			if _, _, ok := locateTS([]byte(tt.value)); ok != tt.ok {
				t.Errorf("locateTS(%s) ok = %v, want %v", tt.value, ok, tt.ok)
			}
		})
	}
}

func TestHeartbeatSpanTakesOnlyANewTS(t *testing.T) {
	row := `{"card":{"name":"ada"},"status":"idle","ts":1700000000000}`
	span := NewHeartbeatSpan([]byte(row), 1700000000000)
	tests := []struct {
		next   string
		ts     int64
		wantOK bool
	}{
		{`{"card":{"name":"ada"},"status":"idle","ts":1700000005000}`, 1700000005000, true},
		{`{"card":{"name":"ada"},"status":"working","ts":1700000005000}`, 0, false},
		{`{"card":{"name":"ada"},"status":"idle","ts":-1}`, 0, false},
		{`{"card":{"name":"ada"},"status":"idle","ts":1700000005000.5}`, 0, false},
	}
	for _, tt := range tests {
		ts, ok := span.Heartbeat([]byte(tt.next))
		if ok != tt.wantOK || ts != tt.ts {
			t.Errorf("Heartbeat(%s) = %d, %v; want %d, %v", tt.next, ts, ok, tt.ts, tt.wantOK)
		}
	}
	if _, ok := NewHeartbeatSpan([]byte(row), 1).Heartbeat([]byte(row)); ok {
		t.Error("a span whose ts differs from the decoded one matched")
	}
}
