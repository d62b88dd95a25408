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

// The delivery service's connection subscribes to its control requests and its own inbox and
// nothing else, and needs no deny: it is granted nothing it must be kept from.
func TestDeliveryPermissionsSubscribeToControlAndInboxOnly(t *testing.T) {
	p := DeliveryPermissions(NewNames("main"), "_INBOX_delivery")
	if want := (SubjectList{"_INBOX_delivery.>", "cotal.main.ctl.delivery.*"}); !slices.Equal(p.Sub.Allow, want) {
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
