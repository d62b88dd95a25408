package wire

import (
	"slices"
	"testing"
)

func TestSubjectListKeepsFirstOccurrenceOrder(t *testing.T) {
	var l SubjectList
	l.add("b", "a", "", "b", "c", "a")
	if want := (SubjectList{"b", "a", "c"}); !slices.Equal(l, want) {
		t.Fatalf("list = %q, want %q", l, want)
	}
}

// The delivery service's connection subscribes to its control requests, its own inbox and the
// presence bucket's writes (followed without a consumer, issue 12 item 4) and nothing else,
// and needs no deny: it is granted nothing it must be kept from.
func TestDeliveryPermissionsSubscribeToControlInboxAndPresenceOnly(t *testing.T) {
	p := DeliveryPermissions(NewNames("main"), "_INBOX_delivery")
	if want := (SubjectList{"_INBOX_delivery.>", "cotal.main.ctl.delivery.*", "$KV.cotal_presence_main.>"}); !slices.Equal(p.Sub.Allow, want) {
		t.Fatalf("sub.allow = %q, want %q", p.Sub.Allow, want)
	}
	if len(p.Pub.Deny) != 0 || len(p.Sub.Deny) != 0 {
		t.Fatalf("denies %q %q, want none", p.Pub.Deny, p.Sub.Deny)
	}
	for _, s := range p.Pub.Allow {
		if s == "$JS.API.INFO" {
			t.Fatal("the delivery credential may call $JS.API.INFO; the service never does")
		}
	}
}
