package delivery

import (
	"encoding/json"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/wire"
)

// put is a KV put of value under key, as the presence watch hands it to the cache.
type put struct {
	jetstream.KeyValueEntry
	key   string
	value []byte
}

func (p put) Key() string                     { return p.key }
func (p put) Value() []byte                   { return p.value }
func (p put) Operation() jetstream.KeyValueOp { return jetstream.KeyValuePut }
func (p put) Revision() uint64                { return 1 }

func presenceValue(t *testing.T, id, name string, status wire.PresenceStatus, ts int64) []byte {
	t.Helper()
	data, err := json.Marshal(wire.Presence{Card: wire.AgentCard{ID: id, Name: name, Kind: wire.CardKindAgent},
		Status: status, TS: ts})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestPresenceCacheTakesHeartbeatsWithoutDecoding(t *testing.T) {
	const id = "UAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	first := presenceValue(t, id, "Bob", wire.StatusIdle, 1_700_000_000_000)
	tests := []struct {
		name      string
		value     []byte
		decodes   bool // the value needs the decoder
		wantName  string
		wantTS    int64
		wantValid bool
	}{
		{"a heartbeat that changes only ts is taken without decoding",
			presenceValue(t, id, "Bob", wire.StatusIdle, 1_700_000_002_000), false, "bob", 1_700_000_002_000, true},
		{"a changed name is decoded", presenceValue(t, id, "Robert", wire.StatusIdle, 1_700_000_002_000),
			true, "robert", 1_700_000_002_000, true},
		{"a changed status is decoded", presenceValue(t, id, "Bob", wire.StatusWorking, 1_700_000_002_000),
			true, "bob", 1_700_000_002_000, true},
		{"a ts that is not plain digits is decoded and refused",
			[]byte(strings.Replace(string(first), "1700000000000", "17e11", 1)), true, "bob", 1_700_000_000_000, false},
		{"a value that does not decode keeps the last valid row",
			[]byte(strings.Replace(string(first), `"card"`, `"kard"`, 1)), true, "bob", 1_700_000_000_000, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var invalid atomic.Int64
			decoded := 0
			decode := func(key string, data []byte) (presenceRow, error) {
				decoded++
				return decodePresenceRow(key, data)
			}
			c := newKVCache("presence", decode, &invalid, slog.New(slog.DiscardHandler))
			c.quick = presenceRow.heartbeat
			c.apply(c.rows, c.rows, put{key: id, value: first})
			decoded = 0
			c.apply(c.rows, c.rows, put{key: id, value: tt.value})
			got, _ := c.get(id)
			if (decoded > 0) != tt.decodes || got.name != tt.wantName || got.ts != tt.wantTS ||
				(invalid.Load() == 0) != tt.wantValid {
				t.Errorf("decoded %d times, row %s ts %d, invalid %d; want decoded %v, %s ts %d, valid %v",
					decoded, got.name, got.ts, invalid.Load(), tt.decodes, tt.wantName, tt.wantTS, tt.wantValid)
			}
		})
	}
}
