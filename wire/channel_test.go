package wire

import (
	"errors"
	"strings"
	"testing"
)

func TestChannelRules(t *testing.T) {
	long := strings.Repeat("a", MaxChannelLen)
	tests := []struct {
		name    string
		channel string
		// whether ValidateChannel, ValidatePublishChannel and ValidatePolicyChannel accept it
		valid, publish, policy bool
	}{
		{"a single segment is concrete and sanitized", "general", true, true, true},
		{"a dotted channel is concrete", "team.backend", true, true, true},
		{"dashes and underscores are sanitized already", "team-a.x_y", true, true, true},
		{"free text is valid but not a policy", "team backend", true, true, false},
		{"a slash would be rewritten, so no policy may name it", "foo/bar", true, true, false},
		{"non-ASCII would be rewritten", "caf\u00e9", true, true, false},
		{"a trailing > is a subscription pattern", "team.>", true, false, true},
		{"a bare > is read-all", ">", true, false, true},
		{"a star matches one segment", "team.*.logs", true, false, true},
		{"> must be last", "team.>.x", false, false, false},
		{"a wildcard mixed into a segment", "team*", false, false, false},
		{"a > inside a segment", "a.b>", false, false, false},
		{"an empty channel", "", false, false, false},
		{"an empty segment", "team..backend", false, false, false},
		{"a leading dot", ".team", false, false, false},
		{"a trailing dot", "team.", false, false, false},
		{"exactly the length limit", long, true, true, true},
		{"one byte over the limit", long + "a", false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := func(rule string, err error, want bool) {
				t.Helper()
				if (err == nil) != want {
					t.Errorf("%s(%q) = %v, want accepted = %v", rule, tt.channel, err, want)
				}
				if err != nil && !errors.Is(err, ErrInvalidChannel) {
					t.Errorf("%s error %v does not wrap ErrInvalidChannel", rule, err)
				}
			}
			check("ValidateChannel", ValidateChannel(tt.channel), tt.valid)
			check("ValidatePublishChannel", ValidatePublishChannel(tt.channel), tt.publish)
			check("ValidatePolicyChannel", ValidatePolicyChannel(tt.channel), tt.policy)
		})
	}
}

func TestMatchChannelFollowsNATSWildcards(t *testing.T) {
	tests := []struct {
		pattern, channel string
		want             bool
	}{
		{"team.backend", "team.backend", true},
		{"team.backend", "team.frontend", false},
		{"team.>", "team.a", true},
		{"team.>", "team.a.b", true},
		{"team.>", "team", false},
		{"team.>", "teams.a", false},
		{"team.*", "team.a", true},
		{"team.*", "team.a.b", false},
		{"team.*", "team", false},
		{"*.logs", "api.logs", true},
		{"*", "general", true},
		{"*", "a.b", false},
		{">", "general", true},
		{">", "a.b.c", true},
		{"team", "team.a", false},
		{"team.*.x.>", "team.a.x.y", true},
		{"team.*.x.>", "team.a.x", false},
		{"team.>", "team.*", false},
		{"team.>", "team.>", false},
		{"team..x", "team..x", false},
		{"", "", false},
	}
	for _, tt := range tests {
		verb := " does not match "
		if tt.want {
			verb = " matches "
		}
		t.Run(tt.pattern+verb+tt.channel, func(t *testing.T) {
			if got := MatchChannel(tt.pattern, tt.channel); got != tt.want {
				t.Fatalf("MatchChannel(%q, %q) = %v, want %v", tt.pattern, tt.channel, got, tt.want)
			}
		})
	}
}

func TestSanitizeChannelKeepsLengthSoTheLimitHoldsOnTheWire(t *testing.T) {
	for _, ch := range []string{"caf\u00e9.\u65e5\u672c", "team backend.>", "a/b.*"} {
		if got := SanitizeChannel(ch); len(got) != len(ch) {
			t.Errorf("SanitizeChannel(%q) = %q changes the length", ch, got)
		}
	}
}

func TestSanitize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"UABC-def_09", "UABC-def_09"},
		{"a.b c", "a_b_c"},
		{"é", "__"}, // two bytes, each replaced
		{"\xff", "_"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Sanitize(tt.in); got != tt.want {
			t.Errorf("Sanitize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = Sanitize("UABC-def_09") }); n != 0 {
		t.Errorf("Sanitize of a safe token allocates %v times, want 0", n)
	}
}
