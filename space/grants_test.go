package space_test

import (
	"slices"
	"testing"

	"github.com/cotal-go/cotal/delivery"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/wire"
)

// The delivery credential must hold exactly what the delivery service uses: anything more
// is privilege nobody needs, anything less stops durable delivery at run time.
func TestDeliveryProfileIsExactlyTheServiceGrants(t *testing.T) {
	const id = "UAQGWOEVJKMIO4WXSYOTLARXYOZTCXFK67JASEH6AFFFYK6FOPSKQCAD"
	for _, space := range []string{"main", "team-2"} {
		n := wire.NewNames(space)
		perms, err := provisioner.Permissions(provisioner.ProfileDelivery, n, id, provisioner.Grants{})
		if err != nil {
			t.Fatal(err)
		}
		want := delivery.ServiceGrants(n, wire.InboxPrefix(id))
		for _, c := range []struct {
			what      string
			got, want []string
		}{
			{"publish", perms.Pub.Allow, want.Publish},
			{"subscribe", perms.Sub.Allow, want.Subscribe},
		} {
			got, exp := slices.Sorted(slices.Values(c.got)), slices.Sorted(slices.Values(c.want))
			if !slices.Equal(got, exp) {
				t.Errorf("space %s %s grants:\n got  %q\n want %q", space, c.what, got, exp)
			}
		}
		if len(perms.Pub.Deny) != 0 || len(perms.Sub.Deny) != 0 {
			t.Errorf("space %s: unexpected denies %v %v", space, perms.Pub.Deny, perms.Sub.Deny)
		}
	}
}
