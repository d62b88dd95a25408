package broker

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

func TestRefusalReason(t *testing.T) {
	user, _ := nkeys.CreateUser()
	pub, _ := user.PublicKey()
	tests := []struct {
		name string
		edit func(*jwt.UserClaims, *jwt.AccountClaims)
		want string
	}{
		{"an expired credential says when", func(uc *jwt.UserClaims, _ *jwt.AccountClaims) {
			uc.Expires = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Unix()
		}, "the credential expired at 2026-01-02T03:04:05Z; mint a new one"},
		{"a revoked credential says so", func(uc *jwt.UserClaims, ac *jwt.AccountClaims) {
			ac.Revoke(pub)
		}, "the credential was revoked; mint a new one"},
		{"anything else keeps nats-server's reason", func(*jwt.UserClaims, *jwt.AccountClaims) {},
			"Authentication Failure"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			uc, ac := jwt.NewUserClaims(pub), jwt.NewAccountClaims("A")
			uc.IssuedAt = time.Now().Add(-time.Minute).Unix() // as every encoded JWT has one
			tc.edit(uc, ac)
			if got := refusalReason(uc, ac, "Authentication Failure"); !strings.HasPrefix(got, tc.want) {
				t.Errorf("refusalReason = %q, want %q", got, tc.want)
			}
		})
	}
}
