package provisioner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cotal-go/cotal/wire"
)

// Grants is an agent's channel scope (SPEC §9): three lists of channel policy strings, each a
// concrete channel (`team.backend`) or a wildcard subtree (`team.*`, `team.>`, `>`), plus the
// anycast role. Only the agent profile takes grants.
type Grants struct {
	// Subscribe is the active read set the agent joins at boot; it must be covered by
	// AllowSubscribe.
	Subscribe []string `json:"subscribe,omitempty"`
	// AllowSubscribe is the read ACL, minted as sub.allow and pinned history-create grants.
	// Empty means Subscribe.
	AllowSubscribe []string `json:"allowSubscribe,omitempty"`
	// AllowPublish is the post ACL; default-deny, so empty means the agent posts to no channel.
	// A wildcard entry lets the agent post to any concrete channel under it.
	AllowPublish []string `json:"allowPublish,omitempty"`
	// Role is the anycast role whose svc_<role> durable the agent binds; empty for none. It
	// must be a routing token ([A-Za-z0-9_-]+), so that it is the same on every subject.
	Role string `json:"role,omitempty"`
	// ManagerControl lets the agent send requests to the space's `manager` control service
	// (docs/agents.md "The manager service"): publish on its own ctl.manager.<id> and
	// subscribe to that subject's reply subtree. Only the supervisor of `cotal up` mints it.
	ManagerControl bool `json:"managerControl,omitempty"`
	// Capabilities are what the agent may ask of the manager service beyond despawning itself
	// (wire.CapabilitySpawn), minted as cotal-capability tags and kept in the registry row,
	// where the service reads them. They need ManagerControl.
	Capabilities []string `json:"capabilities,omitempty"`
}

// IsZero reports whether g grants nothing and names no role.
func (g Grants) IsZero() bool {
	return len(g.Subscribe) == 0 && len(g.AllowSubscribe) == 0 && len(g.AllowPublish) == 0 && g.Role == "" &&
		!g.ManagerControl && len(g.Capabilities) == 0
}

// withDefaults returns g with AllowSubscribe defaulted to Subscribe (SPEC §9).
func (g Grants) withDefaults() Grants {
	if len(g.AllowSubscribe) == 0 {
		g.AllowSubscribe = g.Subscribe
	}
	return g
}

// Validate checks g as the mint does, with AllowSubscribe defaulted to Subscribe: every entry
// a policy string, the role a routing token, and Subscribe covered by AllowSubscribe. An error
// is a *GrantError naming the entry, and wraps ErrInvalidGrant. Tools that take grants from
// elsewhere (an agent file) call it to refuse them before any mint.
func (g Grants) Validate() error { return g.withDefaults().validate() }

// GrantError is a refused grant: the list it is in (subscribe, allowSubscribe, allowPublish or
// role) and its index there (0 for the role), so a caller can point at where it was written.
type GrantError struct {
	Field string
	Index int
	Err   error // wraps ErrInvalidGrant
}

func (e *GrantError) Error() string { return e.Err.Error() }
func (e *GrantError) Unwrap() error { return e.Err }

// validate checks an agent's (defaulted) grants: every entry a policy string, the role a
// routing token, and Subscribe covered by AllowSubscribe.
func (g Grants) validate() error {
	for _, list := range []struct {
		flag    string
		entries []string
	}{{"subscribe", g.Subscribe}, {"allowSubscribe", g.AllowSubscribe}, {"allowPublish", g.AllowPublish}} {
		for i, ch := range list.entries {
			// A segment that sanitizing would rewrite is refused rather than rewritten: a
			// grant must mean exactly the channel its author typed.
			if err := wire.ValidatePolicyChannel(ch); err != nil {
				return &GrantError{list.flag, i, fmt.Errorf("%w: %s entry: %w", ErrInvalidGrant, list.flag, err)}
			}
		}
	}
	if g.Role != "" && !isToken(g.Role) {
		return &GrantError{"role", 0, fmt.Errorf("%w: role %q is not a routing token; use only letters, digits, '_' and '-'", ErrInvalidGrant, g.Role)}
	}
	for i, c := range g.Capabilities {
		if !wire.KnownCapability(c) {
			return &GrantError{"capabilities", i, fmt.Errorf("%w: capability %q is unknown; use %s", ErrInvalidGrant, c, wire.CapabilitySpawn)}
		}
		if !g.ManagerControl {
			return &GrantError{"capabilities", i, fmt.Errorf("%w: capability %q needs the manager control grant, which only the supervisor mints", ErrInvalidGrant, c)}
		}
	}
	for i, ch := range g.Subscribe {
		if !coveredByAny(g.AllowSubscribe, ch) {
			return &GrantError{"subscribe", i, fmt.Errorf("%w: subscribe entry %q is outside allowSubscribe %v; add it to allowSubscribe", ErrInvalidGrant, ch, g.AllowSubscribe)}
		}
	}
	return nil
}

// isToken reports whether s is a non-empty routing token that Sanitize leaves unchanged.
func isToken(s string) bool { return s != "" && wire.Sanitize(s) == s }

func coveredByAny(patterns []string, ch string) bool {
	for _, p := range patterns {
		if Covers(p, ch) {
			return true
		}
	}
	return false
}

// Covers reports whether every channel matched by pattern sub is also matched by pattern
// sup, with NATS wildcard semantics: `*` is one segment, a final `>` one or more. It is the
// one coverage rule of grants: subscribe within allowSubscribe, and a spawned agent's grants
// within its spawner's (Grants.Within).
func Covers(sup, sub string) bool {
	a, b := strings.Split(sup, "."), strings.Split(sub, ".")
	for i, s := range a {
		if s == ">" {
			return i < len(b)
		}
		if i >= len(b) || b[i] == ">" {
			return false
		}
		if s != "*" && s != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

// Within refuses grants g wider than outer: every subscribe, allowSubscribe and allowPublish
// pattern of g (AllowSubscribe defaulted to Subscribe on both sides) must be covered by a
// pattern of the same list of outer (Covers), g's role must be outer's when g names one, and
// g may hold no capability outer lacks. The error is a *GrantError naming g's entry. An agent
// spawning a teammate passes its own grants as outer, so it never hands out more than it holds.
func (g Grants) Within(outer Grants) error {
	g, outer = g.withDefaults(), outer.withDefaults()
	for _, list := range []struct {
		field        string
		inner, outer []string
	}{{"subscribe", g.Subscribe, outer.AllowSubscribe}, {"allowSubscribe", g.AllowSubscribe, outer.AllowSubscribe},
		{"allowPublish", g.AllowPublish, outer.AllowPublish}} {
		for i, ch := range list.inner {
			if !coveredByAny(list.outer, ch) {
				return &GrantError{list.field, i, fmt.Errorf("%w: %s entry %q is outside the spawner's own %v",
					ErrWiderGrant, list.field, ch, list.outer)}
			}
		}
	}
	if g.Role != "" && g.Role != outer.Role {
		return &GrantError{"role", 0, fmt.Errorf("%w: role %q is not the spawner's own role %q", ErrWiderGrant, g.Role, outer.Role)}
	}
	for i, c := range g.Capabilities {
		if !slices.Contains(outer.Capabilities, c) {
			return &GrantError{"capabilities", i, fmt.Errorf("%w: capability %q is not the spawner's", ErrWiderGrant, c)}
		}
	}
	return nil
}
