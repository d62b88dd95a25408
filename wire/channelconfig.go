package wire

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"time"
	"unicode/utf8"
)

// DeliveryClass is a channel's delivery guarantee (SPEC §4, §7).
type DeliveryClass string

// The delivery classes of SPEC §4.
const (
	// DeliveryLive is at-most-once core-subscription delivery.
	DeliveryLive DeliveryClass = "live"
	// DeliveryDurable is live plus a per-member durable backstop, at-least-once within retention.
	DeliveryDurable DeliveryClass = "durable"
)

// Limits on ChannelConfig text (SPEC §7), counted in Unicode code points.
const (
	MaxDescriptionLen  = 200
	MaxInstructionsLen = 2000
)

// replayWindowPattern is SPEC §7's replayWindow syntax, and replayUnits its units.
var (
	replayWindowPattern = regexp.MustCompile(`^\d+(s|m|h|d)$`)
	replayUnits         = map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}
)

// ChannelConfig is a channel's optional registry entry in cotal_channels_<s>, keyed by the
// concrete channel (SPEC §7). Unset fields fall back to ChannelDefaults; resolve them only
// through EffectiveReplay, EffectiveReplayWindow and EffectiveClass.
type ChannelConfig struct {
	// Replay turns history replay on join on or off; nil defers to the space default.
	Replay *bool `json:"replay,omitempty"`
	// ReplayWindow bounds the backfill horizon, e.g. "24h"; see ParseReplayWindow.
	ReplayWindow string `json:"replayWindow,omitempty"`
	// DeliveryClass is live or durable; empty defers to the space default.
	DeliveryClass DeliveryClass `json:"deliveryClass,omitempty"`
	// Description is a one-line purpose, at most MaxDescriptionLen code points.
	Description string `json:"description,omitempty"`
	// Instructions is advisory usage text, at most MaxInstructionsLen code points.
	Instructions string `json:"instructions,omitempty"`
}

// ChannelDefaults are the space-wide defaults under the registry key DefaultsKey (SPEC §7).
// Each field applies to every channel whose ChannelConfig leaves it unset. DeliveryClass is
// written at space creation: durable for an authenticated mesh, live for an open one (SPEC §7,
// docs/storage.md "Channel registry").
type ChannelDefaults struct {
	// Replay is the default for ChannelConfig.Replay; nil means true.
	Replay *bool `json:"replay,omitempty"`
	// ReplayWindow is the default backfill horizon; empty means unbounded.
	ReplayWindow string `json:"replayWindow,omitempty"`
	// DeliveryClass is the default class; empty means durable.
	DeliveryClass DeliveryClass `json:"deliveryClass,omitempty"`
}

// Validate checks the config against SPEC §7. Errors wrap ErrInvalidChannelConfig and name
// the field.
func (c *ChannelConfig) Validate() error {
	if err := validateReplayAndClass(c.ReplayWindow, c.DeliveryClass); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(c.Description); n > MaxDescriptionLen {
		return fmt.Errorf("%w: description has %d characters, the limit is %d",
			ErrInvalidChannelConfig, n, MaxDescriptionLen)
	}
	if n := utf8.RuneCountInString(c.Instructions); n > MaxInstructionsLen {
		return fmt.Errorf("%w: instructions has %d characters, the limit is %d",
			ErrInvalidChannelConfig, n, MaxInstructionsLen)
	}
	return nil
}

// Validate checks the defaults against SPEC §7. Errors wrap ErrInvalidChannelConfig.
func (d *ChannelDefaults) Validate() error {
	return validateReplayAndClass(d.ReplayWindow, d.DeliveryClass)
}

func validateReplayAndClass(window string, class DeliveryClass) error {
	if window != "" {
		if _, err := ParseReplayWindow(window); err != nil {
			return err
		}
	}
	switch class {
	case "", DeliveryLive, DeliveryDurable:
		return nil
	}
	return fmt.Errorf("%w: deliveryClass %q is not live or durable", ErrInvalidChannelConfig, class)
}

// ParseReplayWindow parses a replayWindow of SPEC §7: a positive count followed by s, m, h or d
// (a day is 24 hours). Zero is refused, because EffectiveReplayWindow uses 0 for "unbounded";
// turn replay off with replay=false instead.
func ParseReplayWindow(s string) (time.Duration, error) {
	if !replayWindowPattern.MatchString(s) {
		return 0, fmt.Errorf("%w: replayWindow %q does not match ^\\d+(s|m|h|d)$, e.g. \"24h\"",
			ErrInvalidChannelConfig, s)
	}
	unit := replayUnits[s[len(s)-1]]
	n, err := strconv.ParseUint(s[:len(s)-1], 10, 64)
	if err != nil || n > uint64(math.MaxInt64/unit) {
		return 0, fmt.Errorf("%w: replayWindow %q is too long", ErrInvalidChannelConfig, s)
	}
	if n == 0 {
		return 0, fmt.Errorf("%w: replayWindow %q is zero; set replay to false to disable replay",
			ErrInvalidChannelConfig, s)
	}
	return time.Duration(n) * unit, nil
}

// DecodeChannelConfig decodes and validates a registry entry. A JetStream acknowledgement
// written onto the key through an injected reply subject is refused, as is any value of the
// wrong shape (docs/hostile-agents.md "Reply subjects are the requester's").
func DecodeChannelConfig(data []byte) (*ChannelConfig, error) {
	var c ChannelConfig
	if err := decodeRegistry(data, &c, ErrInvalidChannelConfig); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// DecodeChannelDefaults decodes and validates the DefaultsKey entry, refusing what
// DecodeChannelConfig refuses.
func DecodeChannelDefaults(data []byte) (*ChannelDefaults, error) {
	var d ChannelDefaults
	if err := decodeRegistry(data, &d, ErrInvalidChannelConfig); err != nil {
		return nil, err
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return &d, nil
}

// EffectiveReplay is channel.replay ?? defaults.replay ?? true (SPEC §7). Either argument may
// be nil. Every path (live join, history read) resolves replay here and nowhere else.
func EffectiveReplay(ch *ChannelConfig, d *ChannelDefaults) bool {
	switch {
	case ch != nil && ch.Replay != nil:
		return *ch.Replay
	case d != nil && d.Replay != nil:
		return *d.Replay
	}
	return true
}

// EffectiveClass is channel.deliveryClass ?? defaults.deliveryClass ?? durable (SPEC §7). An
// unrecognized value counts as unset. Live join, durable fan-out, history read and membership
// surfacing all resolve the class here and nowhere else (SPEC §7, §12 item 11).
func EffectiveClass(ch *ChannelConfig, d *ChannelDefaults) DeliveryClass {
	for _, c := range []DeliveryClass{classOf(ch), defaultClassOf(d)} {
		if c == DeliveryLive || c == DeliveryDurable {
			return c
		}
	}
	return DeliveryDurable
}

// EffectiveReplayWindow is channel.replayWindow ?? defaults.replayWindow as a duration, 0
// meaning unbounded (SPEC §7). A window that does not parse counts as unset.
func EffectiveReplayWindow(ch *ChannelConfig, d *ChannelDefaults) time.Duration {
	var windows [2]string
	if ch != nil {
		windows[0] = ch.ReplayWindow
	}
	if d != nil {
		windows[1] = d.ReplayWindow
	}
	for _, w := range windows {
		if dur, err := ParseReplayWindow(w); err == nil {
			return dur
		}
	}
	return 0
}

func classOf(ch *ChannelConfig) DeliveryClass {
	if ch == nil {
		return ""
	}
	return ch.DeliveryClass
}

func defaultClassOf(d *ChannelDefaults) DeliveryClass {
	if d == nil {
		return ""
	}
	return d.DeliveryClass
}

// decodeRegistry decodes a privileged registry value into v. It must be a UTF-8 JSON object and
// not a JetStream reply: a PubAck ({"stream":..,"seq":..}) or an API error ({"error":..}) that
// an agent made the server publish onto the key (docs/hostile-agents.md "Reply subjects are the
// requester's"). Errors wrap sentinel.
func decodeRegistry(data []byte, v any, sentinel error) error {
	var keys map[string]json.RawMessage
	if err := decodeObject(data, &keys); err != nil {
		return fmt.Errorf("%w: %w", sentinel, err)
	}
	for _, k := range []string{"stream", "error"} {
		if _, ok := keys[k]; ok {
			return fmt.Errorf("%w: value has a %q field: a JetStream reply, not a record", sentinel, k)
		}
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %w", sentinel, err)
	}
	return nil
}
