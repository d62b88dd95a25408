package provisioner

import (
	"errors"
	"strings"
	"testing"

	"github.com/cotal-go/cotal/wire"
)

func TestGrantsWithin(t *testing.T) {
	outer := Grants{Subscribe: []string{"team.a"}, AllowSubscribe: []string{"team.>", "general"},
		AllowPublish: []string{"team.*"}, Role: "build", ManagerControl: true, Capabilities: []string{wire.CapabilitySpawn}}
	tests := []struct {
		name  string
		g     Grants
		field string // "" when within
	}{
		{"nothing is within anything", Grants{}, ""},
		{"the same grants are within", outer, ""},
		{"a narrower read is within", Grants{Subscribe: []string{"team.a.b"}}, ""},
		{"a wildcard under a wildcard is within", Grants{AllowSubscribe: []string{"team.x.>"}}, ""},
		{"a concrete publish under a wildcard is within", Grants{AllowPublish: []string{"team.ops"}}, ""},
		{"the same role is within", Grants{Role: "build"}, ""},
		{"a read outside is refused", Grants{Subscribe: []string{"secret"}}, "subscribe"},
		{"a read ACL wider than the spawner's is refused", Grants{Subscribe: []string{"team.a"}, AllowSubscribe: []string{">"}}, "allowSubscribe"},
		{"the parent of a subtree grant is refused", Grants{AllowSubscribe: []string{"team"}}, "allowSubscribe"},
		{"a publish deeper than a * is refused", Grants{AllowPublish: []string{"team.a.b"}}, "allowPublish"},
		{"a publish the spawner only reads is refused", Grants{AllowPublish: []string{"general"}}, "allowPublish"},
		{"another role is refused", Grants{Role: "deploy"}, "role"},
		{"a capability the spawner lacks is refused", Grants{ManagerControl: true, Capabilities: []string{"admin"}}, "capabilities"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.g.Within(outer)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Within = %v, want nil", err)
				}
				return
			}
			var ge *GrantError
			if !errors.As(err, &ge) || ge.Field != tt.field || !errors.Is(err, ErrWiderGrant) {
				t.Fatalf("Within = %v, want a wider-grant error on %s", err, tt.field)
			}
		})
	}
	if err := (Grants{Role: "build"}).Within(Grants{}); err == nil {
		t.Error("a role was within grants that name none")
	}
	if err := (Grants{ManagerControl: true, Capabilities: []string{wire.CapabilitySpawn}}).Within(Grants{ManagerControl: true}); err == nil {
		t.Error("spawn was within grants without it")
	}
}

// FuzzCovers checks Covers against the broker's own meaning of a pattern: when sup covers
// sub, every concrete channel sub matches is matched by sup; and every pattern covers itself.
func FuzzCovers(f *testing.F) {
	for _, s := range [][2]string{{"team.>", "team.a"}, {"team.*", "team.>"}, {">", "a.b"}, {"*.x", "a.x"}, {"a", "a"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, sup, sub string) {
		if wire.ValidatePolicyChannel(sup) != nil || wire.ValidatePolicyChannel(sub) != nil {
			return
		}
		if !Covers(sup, sup) || !Covers(sub, sub) {
			t.Fatalf("a pattern does not cover itself: %q, %q", sup, sub)
		}
		if !Covers(sup, sub) {
			return
		}
		// Each concrete instance of sub: its wildcards filled with a segment (and > with one
		// or two), which sup must match as the broker would.
		for _, fill := range []string{"x", "y.z"} {
			segs := strings.Split(sub, ".")
			for i, s := range segs {
				switch s {
				case "*":
					segs[i] = "x"
				case ">":
					segs[i] = fill
				}
			}
			ch := strings.Join(segs, ".")
			if !wire.MatchChannel(sup, ch) {
				t.Fatalf("Covers(%q, %q) but %q does not match %q", sup, sub, sup, ch)
			}
		}
	})
}
