package endpoint

import (
	"testing"
	"time"

	"github.com/cotal-go/cotal/wire"
)

func TestAHeartbeatIsTakenWithoutDecodingOnlyWhenNothingButTheTSChanged(t *testing.T) {
	const first = `{"card":{"id":"a","name":"alice","kind":"agent"},"status":"idle","ts":1700000000000}`
	tests := []struct {
		name  string
		first string
		next  string
		want  int64 // 0: decode in full
	}{
		{"a new ts is taken", first, `{"card":{"id":"a","name":"alice","kind":"agent"},"status":"idle","ts":1700000002000}`, 1700000002000},
		{"a ts with more digits is taken", first, `{"card":{"id":"a","name":"alice","kind":"agent"},"status":"idle","ts":17000000020001}`, 17000000020001},
		{"a changed status is decoded", first, `{"card":{"id":"a","name":"alice","kind":"agent"},"status":"working","ts":1700000002000}`, 0},
		{"a fractional ts is decoded", first, `{"card":{"id":"a","name":"alice","kind":"agent"},"status":"idle","ts":1700000002000.5}`, 0},
		{"a negative ts is decoded", first, `{"card":{"id":"a","name":"alice","kind":"agent"},"status":"idle","ts":-1}`, 0},
		{"a ts with a leading zero is decoded", first, `{"card":{"id":"a","name":"alice","kind":"agent"},"status":"idle","ts":01}`, 0},
		{"a row with an escape is always decoded",
			`{"card":{"id":"a","name":"al\"ice","kind":"agent"},"status":"idle","ts":1}`,
			`{"card":{"id":"a","name":"al\"ice","kind":"agent"},"status":"idle","ts":2}`, 0},
		{"a row with a second ts key in another case is always decoded",
			`{"card":{"id":"a","name":"alice","kind":"agent"},"status":"idle","ts":1,"TS":1}`,
			`{"card":{"id":"a","name":"alice","kind":"agent"},"status":"idle","ts":2,"TS":1}`, 0},
		{"a row whose activity is the string ts is always decoded",
			`{"card":{"id":"a","name":"alice","kind":"agent"},"status":"idle","activity":"ts","ts":1}`,
			`{"card":{"id":"a","name":"alice","kind":"agent"},"status":"idle","activity":"ts","ts":2}`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := wire.DecodePresence("a", []byte(tt.first))
			if err != nil {
				t.Fatal(err)
			}
			r := newRow(*p, []byte(tt.first), time.UnixMilli(p.TS), time.Minute)
			got, ok := r.heartbeat([]byte(tt.next))
			if !ok {
				got = 0
			}
			if got != tt.want {
				t.Fatalf("heartbeat = %d, %v; want %d", got, ok, tt.want)
			}
			if ok {
				full, err := wire.DecodePresence("a", []byte(tt.next))
				if err != nil || full.TS != got {
					t.Fatalf("the full decoder says ts %v, %v; the fast path %d", full, err, got)
				}
			}
		})
	}
}
