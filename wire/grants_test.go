package wire

import (
	"slices"
	"strings"
	"testing"
)

func TestSubjectListKeepsFirstOccurrenceOrder(t *testing.T) {
	var l SubjectList
	l.add("b", "a", "", "b", "c", "a")
	if want := (SubjectList{"b", "a", "c"}); !slices.Equal(l, want) {
		t.Fatalf("list = %q, want %q", l, want)
	}
}

// The delivery service's connection subscribes to its own inbox and the presence bucket's
// writes (followed without a consumer) and nothing else, and needs no deny: it is granted
// nothing it must be kept from. Its control requests it takes in the agent account.
func TestDeliveryPermissionsSubscribeToInboxAndPresenceOnly(t *testing.T) {
	p := DeliveryPermissions(NewNames("main"), "_INBOX_delivery")
	if want := (SubjectList{"_INBOX_delivery.>", "$KV.cotal_presence_main.>"}); !slices.Equal(p.Sub.Allow, want) {
		t.Fatalf("sub.allow = %q, want %q", p.Sub.Allow, want)
	}
	if len(p.Pub.Deny) != 0 || len(p.Sub.Deny) != 0 {
		t.Fatalf("denies %q %q, want none", p.Pub.Deny, p.Sub.Deny)
	}
	for _, s := range p.Pub.Allow {
		if s == "$JS.API.INFO" {
			t.Fatal("the delivery credential may call $JS.API.INFO; the service never does")
		}
		if strings.HasPrefix(s, "_R_") || strings.Contains(s, ".ctl.") {
			t.Fatalf("the delivery credential may publish %q: control answers go out from the agent account", s)
		}
	}
}

// The control listener takes every sender's requests and answers only inside a request's
// own .reply. subtree.
func TestDeliveryControlPermissionsAnswerInsideTheReplySubtreeOnly(t *testing.T) {
	p := DeliveryControlPermissions(NewNames("main"))
	if want := (SubjectList{"cotal.main.ctl.delivery.*"}); !slices.Equal(p.Sub.Allow, want) {
		t.Errorf("sub.allow = %q, want %q", p.Sub.Allow, want)
	}
	if want := (SubjectList{"cotal.main.ctl.delivery.*.reply.>"}); !slices.Equal(p.Pub.Allow, want) {
		t.Errorf("pub.allow = %q, want %q", p.Pub.Allow, want)
	}
}
