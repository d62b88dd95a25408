package provisioner

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cotal-go/cotal/wire"
	"github.com/nats-io/jwt/v2"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current Permissions")

// goldenCases are the permission sets pinned in testdata: one per profile, plus an agent with
// no grants (the default-deny shape).
var goldenCases = []struct {
	file    string
	profile Profile
	grants  Grants
}{
	{"agent", ProfileAgent, Grants{
		Subscribe:      []string{"general"},
		AllowSubscribe: []string{"general", "team.>"},
		AllowPublish:   []string{"general", "team.*"},
		Role:           "reviewer",
	}},
	{"agent-bare", ProfileAgent, Grants{}},
	{"observer", ProfileObserver, Grants{}},
	{"admin", ProfileAdmin, Grants{}},
	{"provisioner", ProfileProvisioner, Grants{}},
	{"delivery", ProfileDelivery, Grants{}},
	{"delivery-control", ProfileDeliveryControl, Grants{}},
	{"leaf-relay", ProfileLeafRelay, Grants{}},
	{"manager-control", ProfileManagerControl, Grants{}},
	{"agent-supervised", ProfileAgent, Grants{
		Subscribe:      []string{"general"},
		AllowPublish:   []string{"general"},
		ManagerControl: true,
		Capabilities:   []string{wire.CapabilitySpawn},
	}},
}

func TestPermissionsMatchGoldenFiles(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(fmt.Sprintf("the %s permissions match testdata/%s.golden", tc.file, tc.file), func(t *testing.T) {
			p, err := Permissions(tc.profile, wire.NewNames("alpha"), testID, tc.grants)
			if err != nil {
				t.Fatal(err)
			}
			got := formatPermissions(p)
			path := filepath.Join("testdata", tc.file+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("permissions differ from %s (run go test -update after reviewing):\n%s", path, got)
			}
		})
	}
}

func formatPermissions(p jwt.Permissions) string {
	var b strings.Builder
	for _, l := range []struct {
		name string
		list jwt.StringList
	}{{"sub.allow", p.Sub.Allow}, {"sub.deny", p.Sub.Deny}, {"pub.allow", p.Pub.Allow}, {"pub.deny", p.Pub.Deny}} {
		fmt.Fprintf(&b, "%s:\n", l.name)
		for _, s := range l.list {
			fmt.Fprintf(&b, "  %s\n", s)
		}
	}
	if p.Resp != nil {
		fmt.Fprintf(&b, "resp: %+v\n", *p.Resp)
	}
	return b.String()
}

// allowed reports whether p lets a client publish (or subscribe to) subject, the way the
// broker decides: some allow matches and no deny does.
func allowed(perm jwt.Permission, subject string) bool {
	match := func(list jwt.StringList) bool {
		for _, pattern := range list {
			if subjectMatches(pattern, subject) {
				return true
			}
		}
		return false
	}
	return match(perm.Allow) && !match(perm.Deny)
}

// subjectMatches is NATS subject matching of a literal subject against a pattern.
func subjectMatches(pattern, subject string) bool {
	p, s := strings.Split(pattern, "."), strings.Split(subject, ".")
	for i, tok := range p {
		if tok == ">" {
			return len(s) > i
		}
		if i >= len(s) || (tok != "*" && tok != s[i]) {
			return false
		}
	}
	return len(p) == len(s)
}

func TestDeliveryConsumersAreOutOfReachOfUserProfiles(t *testing.T) {
	n := wire.NewNames("alpha")
	chat, inbox := n.ChatStream(), n.InboxStream()
	verbs := []string{
		"$JS.API.CONSUMER.CREATE." + chat, // the bare form names the consumer in the body
		"$JS.API.CONSUMER.CREATE." + chat + ".fanout",
		"$JS.API.CONSUMER.CREATE." + chat + ".fanout.cotal.alpha.chat.>",
		"$JS.API.CONSUMER.DURABLE.CREATE." + chat + ".fanout",
		"$JS.API.CONSUMER.DELETE." + chat + ".fanout",
		"$JS.API.CONSUMER.MSG.NEXT." + chat + ".fanout",
		"$JS.ACK." + chat + ".fanout.1.2.3.4.5",
		"$JS.API.CONSUMER.CREATE." + inbox + ".reader",
		"$JS.API.CONSUMER.DELETE." + inbox + ".reader",
		"$JS.API.CONSUMER.MSG.NEXT." + inbox + ".reader",
		"$JS.ACK." + inbox + ".reader.1.2.3.4.5",
	}
	for _, tc := range goldenCases[:4] {
		p, err := Permissions(tc.profile, n, testID, tc.grants)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range verbs {
			t.Run(fmt.Sprintf("%s cannot publish %s", tc.file, v), func(t *testing.T) {
				if allowed(p.Pub, v) {
					t.Errorf("%s may publish %s", tc.profile, v)
				}
			})
		}
	}
}

func TestAgentReadsOnlyWithinItsACL(t *testing.T) {
	n := wire.NewNames("alpha")
	p, err := Permissions(ProfileAgent, n, testID, goldenCases[0].grants)
	if err != nil {
		t.Fatal(err)
	}
	hist := "$JS.API.CONSUMER.CREATE.CHAT_alpha.chathist_" + testID + "."
	tests := []struct {
		name    string
		perm    jwt.Permission
		subject string
		want    bool
	}{
		{"it subscribes to an allowed channel", p.Sub, "cotal.alpha.chat.UX.general", true},
		{"it subscribes under an allowed subtree", p.Sub, "cotal.alpha.chat.UX.team.backend", true},
		{"it does not subscribe to the bare subtree root", p.Sub, "cotal.alpha.chat.UX.team", false},
		{"it does not subscribe to another channel", p.Sub, "cotal.alpha.chat.UX.secret", false},
		{"it does not subscribe to DMs", p.Sub, "cotal.alpha.inst." + testID + ".UX", false},
		{"it creates the pinned history consumer of an allowed channel", p.Pub, hist + "cotal.alpha.chat.*.general", true},
		{"it creates no history consumer of another channel", p.Pub, hist + "cotal.alpha.chat.*.secret", false},
		{"it creates no unfiltered history consumer", p.Pub, "$JS.API.CONSUMER.CREATE.CHAT_alpha.chathist_" + testID, false},
		{"it posts to an allowed channel as itself", p.Pub, "cotal.alpha.chat." + testID + ".general", true},
		{"it posts under an allowed wildcard", p.Pub, "cotal.alpha.chat." + testID + ".team.x", true},
		{"it does not post as another sender", p.Pub, "cotal.alpha.chat.UX.general", false},
		{"it does not post to a channel outside allowPublish", p.Pub, "cotal.alpha.chat." + testID + ".secret", false},
		{"it writes its own presence key", p.Pub, "$KV.cotal_presence_alpha." + testID, true},
		{"it does not write another presence key", p.Pub, "$KV.cotal_presence_alpha.UX", false},
		{"it does not write the ACL registry", p.Pub, "$KV.cotal_acl_alpha." + testID, false},
		{"it does not write the members registry", p.Pub, "$KV.cotal_members_alpha.general/" + testID, false},
		{"it cannot create its DM durable", p.Pub, "$JS.API.CONSUMER.CREATE.DM_alpha.dm_" + testID, false},
		{"it cannot create its DLV durable", p.Pub, "$JS.API.CONSUMER.CREATE.DLV_alpha.dlv_" + testID, false},
		{"it binds its DLV durable", p.Pub, "$JS.API.CONSUMER.MSG.NEXT.DLV_alpha.dlv_" + testID, true},
		{"it does not bind another's DLV durable", p.Pub, "$JS.API.CONSUMER.MSG.NEXT.DLV_alpha.dlv_UX", false},
		{"it has no Direct Get on CHAT", p.Pub, "$JS.API.DIRECT.GET.CHAT_alpha", false},
		{"it cannot read the backstop store", p.Pub, "$JS.API.CONSUMER.CREATE.INBOX_alpha.x", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := allowed(tt.perm, tt.subject); got != tt.want {
				t.Errorf("allowed(%s) = %v, want %v", tt.subject, got, tt.want)
			}
		})
	}
}

func TestReadOnlyProfilesHaveNoApplicationPublish(t *testing.T) {
	for _, tc := range goldenCases[2:4] {
		t.Run(fmt.Sprintf("%s publishes no cotal subject", tc.file), func(t *testing.T) {
			p, err := Permissions(tc.profile, wire.NewNames("alpha"), testID, Grants{})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range p.Pub.Allow {
				if strings.HasPrefix(s, "cotal.") || strings.HasPrefix(s, "$KV.") {
					t.Errorf("%s may publish %s", tc.profile, s)
				}
			}
		})
	}
}

func TestPermissionsRefusesBadInput(t *testing.T) {
	n := wire.NewNames("alpha")
	tests := []struct {
		name    string
		profile Profile
		names   wire.Names
		id      string
		grants  Grants
		want    error
	}{
		{"an observer with an ACL is refused", ProfileObserver, n, testID, Grants{AllowSubscribe: []string{"general"}}, ErrGrantsNotAllowed},
		{"an admin with a role is refused", ProfileAdmin, n, testID, Grants{Role: "x"}, ErrGrantsNotAllowed},
		{"delivery with a publish grant is refused", ProfileDelivery, n, testID, Grants{AllowPublish: []string{"general"}}, ErrGrantsNotAllowed},
		{"an id that is not a user key is refused", ProfileAgent, n, "alice", Grants{}, ErrInvalidGrant},
		{"an unknown profile is refused", Profile("manager"), n, testID, Grants{}, ErrUnknownProfile},
		{"zero Names are refused", ProfileAgent, wire.Names{}, testID, Grants{}, ErrInvalidRequest},
		{"a subscribe outside allowSubscribe is refused", ProfileAgent, n, testID,
			Grants{Subscribe: []string{"general"}, AllowSubscribe: []string{"team.>"}}, ErrInvalidGrant},
		{"a channel that sanitizing would rewrite is refused", ProfileAgent, n, testID, Grants{AllowPublish: []string{"foo/bar"}}, ErrInvalidGrant},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Permissions(tt.profile, tt.names, tt.id, tt.grants)
			if !errors.Is(err, tt.want) {
				t.Errorf("Permissions = %v, want %v", err, tt.want)
			}
		})
	}
}
