package provisioner

import (
	"errors"
	"testing"
)

func TestCovers(t *testing.T) {
	tests := []struct {
		sup, sub string
		want     bool
	}{
		{"general", "general", true},
		{"general", "other", false},
		{"team.>", "team.backend", true},
		{"team.>", "team.backend.db", true},
		{"team.>", "team", false},
		{"team.>", "team.>", true},
		{"team.>", "team.*", true},
		{">", "anything.at.all", true},
		{"team.*", "team.backend", true},
		{"team.*", "team.backend.db", false},
		{"team.*", "team.>", false},
		{"team.backend", "team.*", false},
		{"*.alerts", "ops.alerts", true},
		{"team.*.x", "team.a.x", true},
	}
	for _, tt := range tests {
		t.Run(tt.sup+" covers "+tt.sub, func(t *testing.T) {
			if got := Covers(tt.sup, tt.sub); got != tt.want {
				t.Errorf("Covers(%q, %q) = %v, want %v", tt.sup, tt.sub, got, tt.want)
			}
		})
	}
}

func TestGrantsValidate(t *testing.T) {
	tests := []struct {
		name string
		g    Grants
		ok   bool
	}{
		{"no grants are valid", Grants{}, true},
		{"subscribe alone defaults allowSubscribe to itself", Grants{Subscribe: []string{"general", "team.>"}}, true},
		{"subscribe covered by a wildcard ACL is valid", Grants{Subscribe: []string{"team.x"}, AllowSubscribe: []string{"team.>"}}, true},
		{"subscribe outside allowSubscribe is refused", Grants{Subscribe: []string{"general"}, AllowSubscribe: []string{"team.>"}}, false},
		{"a wildcard publish grant is valid", Grants{AllowPublish: []string{"team.>"}}, true},
		{"a malformed publish grant is refused", Grants{AllowPublish: []string{"foo/bar"}}, false},
		{"a malformed ACL entry is refused", Grants{AllowSubscribe: []string{"a b"}}, false},
		{"a > before the last segment is refused", Grants{AllowSubscribe: []string{"team.>.x"}}, false},
		{"an empty segment is refused", Grants{Subscribe: []string{"team..x"}}, false},
		{"a routing-token role is valid", Grants{Role: "code-reviewer_2"}, true},
		{"a role that sanitizing would rewrite is refused", Grants{Role: "code reviewer"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.g.Validate()
			if (err == nil) != tt.ok {
				t.Fatalf("validate() = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidGrant) {
				t.Errorf("error %v is not ErrInvalidGrant", err)
			}
		})
	}
}

func TestGrantErrorNamesTheEntry(t *testing.T) {
	tests := []struct {
		name  string
		g     Grants
		field string
		index int
	}{
		{"the second publish entry", Grants{AllowPublish: []string{"ok", "foo/bar"}}, "allowPublish", 1},
		{"a subscribe entry outside the ACL", Grants{Subscribe: []string{"team.a", "ops"}, AllowSubscribe: []string{"team.>"}}, "subscribe", 1},
		{"the role", Grants{Role: "a b"}, "role", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ge *GrantError
			if err := tt.g.Validate(); !errors.As(err, &ge) {
				t.Fatalf("Validate() = %v, want a *GrantError", err)
			}
			if ge.Field != tt.field || ge.Index != tt.index {
				t.Errorf("GrantError names %s[%d], want %s[%d]", ge.Field, ge.Index, tt.field, tt.index)
			}
		})
	}
}
