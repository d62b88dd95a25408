package endpoint

import (
	"encoding/json"
	"testing"

	"github.com/cotal-go/cotal/wire"
)

func TestAHeartbeatEncodesWhatJSONMarshalWrites(t *testing.T) {
	card := wire.AgentCard{ID: "a", Name: "al<i>ce \"x\"", Kind: wire.CardKindAgent, Tags: []string{"t"}}
	tests := []struct {
		name   string
		change func(p *presenceState)
		status wire.PresenceStatus
		ts     int64
	}{
		{"the first heartbeat", func(*presenceState) {}, wire.StatusIdle, 1700000000000},
		{"a later heartbeat reuses the row", func(*presenceState) {}, wire.StatusIdle, 1700000002000},
		{"a new status and activity", func(p *presenceState) {
			p.status, p.activity, p.row = wire.StatusWorking, "reviewing ✓", nil
		}, wire.StatusWorking, 1700000004000},
		{"attention and channel modes", func(p *presenceState) {
			p.attention, p.row = wire.AttentionFocus, nil
			p.channelModes = map[string]wire.ChannelMode{"noise": wire.ChannelModeMuted, "b": wire.ChannelModeQuiet}
		}, wire.StatusWorking, 1700000006000},
		{"the final offline record", func(*presenceState) {}, wire.StatusOffline, 1700000008000},
		{"a heartbeat after the offline encoding", func(*presenceState) {}, wire.StatusWorking, 1700000010000},
	}
	e := &Endpoint{card: card}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.change(&e.pres)
			got, err := e.encodePresence(tt.status, tt.ts)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := json.Marshal(wire.Presence{Card: card, Status: tt.status, Activity: e.pres.activity,
				Attention: e.pres.attention, ChannelModes: e.pres.channelModes, TS: tt.ts})
			if string(got) != string(want) {
				t.Fatalf("encoded\n%s\nwant\n%s", got, want)
			}
		})
	}
}
