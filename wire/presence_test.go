package wire

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"
)

func vecPresence() Presence {
	return Presence{
		Card: AgentCard{ID: vecAlice, Name: "alice", Kind: CardKindAgent, Role: "planner",
			Skills: []AgentSkill{{ID: "review", Name: "Review"}}, Meta: map[string]any{"model": "m"},
			ProtocolVersion: ProtocolVersion},
		Status: StatusWorking, Activity: "reviewing", Attention: AttentionFocus,
		ChannelModes: map[string]ChannelMode{"team.backend": ChannelModeMuted},
		TS:           1710000000000,
	}
}

func TestDecodePresenceRoundTrip(t *testing.T) {
	p := vecPresence()
	got, err := DecodePresence(vecAlice, mustMarshal(t, p))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*got, p) {
		t.Fatalf("DecodePresence =\n%+v\nwant\n%+v", *got, p)
	}
}

func TestDecodePresenceDropsWhatIsNotThisInstancesPresence(t *testing.T) {
	edit := func(f func(map[string]any)) []byte {
		var obj map[string]any
		mustUnmarshal(t, mustMarshal(t, vecPresence()), &obj)
		f(obj)
		return mustMarshal(t, obj)
	}
	card := func(obj map[string]any) map[string]any { return obj["card"].(map[string]any) }
	tests := []struct {
		name    string
		key     string
		payload []byte
	}{
		{"a JetStream PubAck written through an injected reply subject", vecAlice,
			[]byte(`{"stream":"KV_cotal_presence_main","seq":12}`)},
		{"a JetStream error reply", vecAlice, []byte(`{"error":{"code":503,"description":"no responders"}}`)},
		{"invalid JSON", vecAlice, []byte(`{"card":`)},
		{"invalid UTF-8", vecAlice, []byte("{\"card\":\"\xff\"}")},
		{"an array", vecAlice, []byte(`[]`)},
		{"a row under another instance's key", vecBob, mustMarshal(t, vecPresence())},
		{"a missing card", vecAlice, edit(func(o map[string]any) { delete(o, "card") })},
		{"a missing ts", vecAlice, edit(func(o map[string]any) { delete(o, "ts") })},
		{"a missing status", vecAlice, edit(func(o map[string]any) { delete(o, "status") })},
		{"an unknown status", vecAlice, edit(func(o map[string]any) { o["status"] = "busy" })},
		{"an unknown attention", vecAlice, edit(func(o map[string]any) { o["attention"] = "away" })},
		{"an unknown channel mode", vecAlice, edit(func(o map[string]any) {
			o["channelModes"] = map[string]any{"x": "loud"}
		})},
		{"an unknown card kind", vecAlice, edit(func(o map[string]any) { card(o)["kind"] = "robot" })},
		{"a card without name", vecAlice, edit(func(o map[string]any) { delete(card(o), "name") })},
		{"a card without id", vecAlice, edit(func(o map[string]any) { delete(card(o), "id") })},
		{"a string ts", vecAlice, edit(func(o map[string]any) { o["ts"] = "now" })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if p, err := DecodePresence(tt.key, tt.payload); !errors.Is(err, ErrInvalidPresence) {
				t.Fatalf("DecodePresence = %+v, %v; want ErrInvalidPresence", p, err)
			}
		})
	}
}

func TestDecodePresenceIgnoresUnknownFields(t *testing.T) {
	var obj map[string]any
	mustUnmarshal(t, mustMarshal(t, vecPresence()), &obj)
	obj["future"] = true
	obj["card"].(map[string]any)["com.acme.x"] = 1
	if _, err := DecodePresence(vecAlice, mustMarshal(t, obj)); err != nil {
		t.Fatal(err)
	}
}

func TestPresenceStaleness(t *testing.T) {
	now := time.UnixMilli(1710000010000)
	tests := []struct {
		name  string
		ts    int64
		stale bool
	}{
		{"a fresh heartbeat", now.UnixMilli() - 100, false},
		{"a heartbeat exactly one window old", now.UnixMilli() - DefaultLivenessWindow.Milliseconds(), false},
		{"a heartbeat just past the window", now.UnixMilli() - DefaultLivenessWindow.Milliseconds() - 1, true},
		{"a heartbeat from the far past", -1 << 63, true},
		{"a heartbeat from a fast clock", now.UnixMilli() + 5000, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Presence{Status: StatusWorking, TS: tt.ts}
			if got := p.Stale(now, DefaultLivenessWindow); got != tt.stale {
				t.Fatalf("Stale = %v, want %v", got, tt.stale)
			}
			want := StatusWorking
			if tt.stale {
				want = StatusOffline
			}
			if got := p.EffectiveStatus(now, DefaultLivenessWindow); got != want {
				t.Fatalf("EffectiveStatus = %q, want %q", got, want)
			}
		})
	}
}

func mustUnmarshal(t testing.TB, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}
