package wire

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseReplayWindow(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"30s", 30 * time.Second, true},
		{"15m", 15 * time.Minute, true},
		{"24h", 24 * time.Hour, true},
		{"7d", 7 * 24 * time.Hour, true},
		{"0001h", time.Hour, true},
		{"106751d", 106751 * 24 * time.Hour, true},
		{"106752d", 0, false},
		{"99999999999999999999s", 0, false},
		{"0s", 0, false},
		{"", 0, false},
		{"h", 0, false},
		{"1", 0, false},
		{"1w", 0, false},
		{"1H", 0, false},
		{"-1h", 0, false},
		{"1.5h", 0, false},
		{" 1h", 0, false},
		{"1h30m", 0, false},
		{"\u0661h", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseReplayWindow(tt.in)
			if (err == nil) != tt.ok || got != tt.want {
				t.Fatalf("ParseReplayWindow(%q) = %v, %v; want %v, ok = %v", tt.in, got, err, tt.want, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidChannelConfig) {
				t.Fatalf("error %v does not wrap ErrInvalidChannelConfig", err)
			}
		})
	}
}

func TestChannelConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  ChannelConfig
		ok   bool
	}{
		{"an empty config is valid", ChannelConfig{}, true},
		{"a full config is valid", ChannelConfig{Replay: replayFlag(false), ReplayWindow: "24h",
			DeliveryClass: DeliveryLive, Description: "d", Instructions: "i"}, true},
		{"200 characters of description fit, counted as code points",
			ChannelConfig{Description: strings.Repeat("\u00e9", MaxDescriptionLen)}, true},
		{"201 characters of description do not", ChannelConfig{Description: strings.Repeat("a", MaxDescriptionLen+1)}, false},
		{"2000 characters of instructions fit", ChannelConfig{Instructions: strings.Repeat("a", MaxInstructionsLen)}, true},
		{"2001 do not", ChannelConfig{Instructions: strings.Repeat("a", MaxInstructionsLen+1)}, false},
		{"an unknown class is refused", ChannelConfig{DeliveryClass: "besteffort"}, false},
		{"a bad replay window is refused", ChannelConfig{ReplayWindow: "1w"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if (err == nil) != tt.ok {
				t.Fatalf("Validate = %v, want ok = %v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidChannelConfig) {
				t.Fatalf("error %v does not wrap ErrInvalidChannelConfig", err)
			}
		})
	}
}

func TestDecodeChannelRegistryEntries(t *testing.T) {
	tests := []struct {
		name, json string
		ok         bool
	}{
		{"an empty object", `{}`, true},
		{"a config with unknown fields", `{"replay":false,"deliveryClass":"live","future":1}`, true},
		{"a JetStream PubAck", `{"stream":"KV_cotal_channels_main","seq":3}`, false},
		{"a JetStream error", `{"error":{"code":400}}`, false},
		{"an array", `[]`, false},
		{"a null", `null`, false},
		{"a string replay", `{"replay":"yes"}`, false},
		{"an unknown class", `{"deliveryClass":"fast"}`, false},
		{"a bad window", `{"replayWindow":"forever"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, cerr := DecodeChannelConfig([]byte(tt.json))
			_, derr := DecodeChannelDefaults([]byte(tt.json))
			for _, err := range []error{cerr, derr} {
				if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalidChannelConfig)) {
					t.Fatalf("decode(%s) = %v, want ok = %v", tt.json, err, tt.ok)
				}
			}
		})
	}
	long := `{"description":"` + strings.Repeat("a", MaxDescriptionLen+1) + `"}`
	if _, err := DecodeChannelConfig([]byte(long)); err == nil {
		t.Error("DecodeChannelConfig accepted a description over the limit")
	}
}

func TestEffectiveResolution(t *testing.T) {
	tests := []struct {
		name   string
		ch     *ChannelConfig
		d      *ChannelDefaults
		replay bool
		class  DeliveryClass
		window time.Duration
	}{
		{"nothing configured: replay on, durable, unbounded", nil, nil, true, DeliveryDurable, 0},
		{"empty records behave as nothing", &ChannelConfig{}, &ChannelDefaults{}, true, DeliveryDurable, 0},
		{"the space default applies", nil,
			&ChannelDefaults{Replay: replayFlag(false), ReplayWindow: "1h", DeliveryClass: DeliveryLive},
			false, DeliveryLive, time.Hour},
		{"the channel overrides the default",
			&ChannelConfig{Replay: replayFlag(true), ReplayWindow: "2d", DeliveryClass: DeliveryDurable},
			&ChannelDefaults{Replay: replayFlag(false), ReplayWindow: "1h", DeliveryClass: DeliveryLive},
			true, DeliveryDurable, 48 * time.Hour},
		{"an explicit false on the channel beats a true default",
			&ChannelConfig{Replay: replayFlag(false)}, &ChannelDefaults{Replay: replayFlag(true)}, false, DeliveryDurable, 0},
		{"unset channel fields fall through one by one",
			&ChannelConfig{DeliveryClass: DeliveryLive}, &ChannelDefaults{ReplayWindow: "30m"},
			true, DeliveryLive, 30 * time.Minute},
		{"unrecognized values count as unset",
			&ChannelConfig{DeliveryClass: "x", ReplayWindow: "1w"},
			&ChannelDefaults{DeliveryClass: DeliveryLive, ReplayWindow: "5s"},
			true, DeliveryLive, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EffectiveReplay(tt.ch, tt.d); got != tt.replay {
				t.Errorf("EffectiveReplay = %v, want %v", got, tt.replay)
			}
			if got := EffectiveClass(tt.ch, tt.d); got != tt.class {
				t.Errorf("EffectiveClass = %q, want %q", got, tt.class)
			}
			if got := EffectiveReplayWindow(tt.ch, tt.d); got != tt.window {
				t.Errorf("EffectiveReplayWindow = %v, want %v", got, tt.window)
			}
		})
	}
}

func replayFlag(b bool) *bool { return &b }
