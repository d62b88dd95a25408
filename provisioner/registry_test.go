package provisioner

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/cotal-go/cotal/wire"
)

func TestListAndRecord(t *testing.T) {
	s := openStore(t)
	a := mint(t, s, MintRequest{Name: "ada", Grants: Grants{Subscribe: []string{"general"}, Role: "dev"}})
	o := mint(t, s, MintRequest{Name: "oscar", Profile: ProfileObserver})
	recs, err := s.List("alpha")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("List returned %d records, want 2", len(recs))
	}
	for _, c := range []*Credential{a, o} {
		r, err := s.Record("alpha", c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Name != c.Name || r.Profile != c.Profile || r.Space != "alpha" || !reflect.DeepEqual(r.Grants, c.Grants) ||
			!r.IssuedAt.Equal(c.IssuedAt) || r.Revision != 1 || !r.Active(time.Now()) {
			t.Errorf("record %+v does not describe credential %s", r, c.Name)
		}
	}
	if _, err := s.Record("alpha", testID); !errors.Is(err, ErrUnknownCredential) {
		t.Errorf("Record(unknown) = %v, want ErrUnknownCredential", err)
	}
	if _, err := s.List("beta"); !errors.Is(err, ErrUnknownSpace) {
		t.Errorf("List(beta) = %v, want ErrUnknownSpace", err)
	}
}

func TestRevoke(t *testing.T) {
	s := openStore(t)
	c := mint(t, s, MintRequest{Grants: Grants{Subscribe: []string{"general"}}})
	token, err := s.Revoke("alpha", c.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("the returned account JWT revokes the credential", func(t *testing.T) {
		if !decodeAccount(t, token).IsClaimRevoked(decodeUser(t, c.JWT)) {
			t.Error("the credential is not revoked")
		}
		if a, _ := s.Space("alpha"); a.JWT != token {
			t.Error("the returned JWT is not the stored one")
		}
	})
	t.Run("the record is marked revoked and reads nothing", func(t *testing.T) {
		rec, err := s.Record("alpha", c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !rec.Revoked || rec.RevokedAt.IsZero() || rec.Revision != 2 || rec.Active(time.Now()) {
			t.Errorf("record %+v", rec)
		}
		if acl := ACLFor(rec); len(acl.AllowSubscribe) != 0 || acl.Revision != 2 {
			t.Errorf("ACL of a revoked record %+v", acl)
		}
	})
	t.Run("revoking again changes nothing", func(t *testing.T) {
		again, err := s.Revoke("alpha", c.ID)
		if err != nil || again != token {
			t.Errorf("second Revoke = %v, same JWT %v", err, again == token)
		}
	})
	t.Run("an unknown id is refused", func(t *testing.T) {
		if _, err := s.Revoke("alpha", testID); !errors.Is(err, ErrUnknownCredential) {
			t.Errorf("Revoke(unknown) = %v, want ErrUnknownCredential", err)
		}
	})
}

func TestACLFor(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_123)
	tests := []struct {
		name string
		rec  Record
		want string
	}{
		{"an agent reads its allowSubscribe",
			Record{Profile: ProfileAgent, Grants: Grants{AllowSubscribe: []string{"general", "team.>"}}, Revision: 3, UpdatedAt: at},
			`{"allowSubscribe":["general","team.>"],"revision":3,"updatedAt":1700000000123}`},
		{"an agent without an ACL reads nothing",
			Record{Profile: ProfileAgent, Revision: 1, UpdatedAt: at},
			`{"allowSubscribe":[],"revision":1,"updatedAt":1700000000123}`},
		{"an observer reads all chat",
			Record{Profile: ProfileObserver, Revision: 1, UpdatedAt: at},
			`{"allowSubscribe":[">"],"revision":1,"updatedAt":1700000000123}`},
		{"an admin reads all chat",
			Record{Profile: ProfileAdmin, Revision: 1, UpdatedAt: at},
			`{"allowSubscribe":[">"],"revision":1,"updatedAt":1700000000123}`},
		{"a revoked credential reads nothing",
			Record{Profile: ProfileObserver, Revoked: true, Revision: 2, UpdatedAt: at},
			`{"allowSubscribe":[],"revision":2,"updatedAt":1700000000123}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(ACLFor(tt.rec))
			if err != nil {
				t.Fatal(err)
			}
			// Compared as JSON values: encoding/json escapes '>' as \u003e.
			var got, want any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("ACLFor = %s, want %s", b, tt.want)
			}
			if _, err := wire.DecodeACLRecord(b); err != nil {
				t.Errorf("the trusted reader would refuse the record: %v", err)
			}
		})
	}
}
