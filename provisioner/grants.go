package provisioner

import (
	"fmt"
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
}

// IsZero reports whether g grants nothing and names no role.
func (g Grants) IsZero() bool {
	return len(g.Subscribe) == 0 && len(g.AllowSubscribe) == 0 && len(g.AllowPublish) == 0 && g.Role == ""
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
		if covers(p, ch) {
			return true
		}
	}
	return false
}

// covers reports whether every channel matched by pattern sub is also matched by pattern
// sup, with NATS wildcard semantics: `*` is one segment, a final `>` one or more.
func covers(sup, sub string) bool {
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
