package wire

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestIdentityRecordsDecodeStrictly(t *testing.T) {
	cases := []struct {
		name, data string
		ok         bool
	}{
		{"a record", `{"name":"bob","profile":"agent","active":true}`, true},
		{"a revoked one", `{"name":"bob","profile":"agent","active":false}`, true},
		{"no name", `{"profile":"agent","active":true}`, false},
		{"an empty name", `{"name":"","profile":"agent","active":true}`, false},
		{"no active", `{"name":"bob","profile":"agent"}`, false},
		{"a PubAck", `{"stream":"KV_cotal_identities_main","seq":3}`, false},
		{"not JSON", `bob`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := DecodeIdentityRecord([]byte(c.data)); (err == nil) != c.ok {
				t.Fatalf("DecodeIdentityRecord(%s) = %v, want ok %t", c.data, err, c.ok)
			}
		})
	}
}

func TestNameRecordsDecodeStrictly(t *testing.T) {
	empty, err := json.Marshal(NameRecord{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, data string
		ok         bool
	}{
		{"one id", `{"ids":["UABC"]}`, true},
		{"none, as written", string(empty), true},
		{"null", `{"ids":null}`, false},
		{"a wildcard", `{"ids":["*"]}`, false},
		{"a PubAck", `{"stream":"KV_cotal_identities_main","seq":3}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := DecodeNameRecord([]byte(c.data)); (err == nil) != c.ok {
				t.Fatalf("DecodeNameRecord(%s) = %v, want ok %t", c.data, err, c.ok)
			}
		})
	}
}

func TestNameKeysAreCaseInsensitiveKVKeys(t *testing.T) {
	if NameKey("Bob") != NameKey("bob") {
		t.Errorf("NameKey(Bob) = %s, NameKey(bob) = %s", NameKey("Bob"), NameKey("bob"))
	}
	for _, name := range []string{"bob", "Ünïcode name", "a.b*c>d", "x/y=z"} {
		k := NameKey(name)
		if strings.Trim(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") != "" {
			t.Errorf("NameKey(%q) = %q holds characters a KV key may not", name, k)
		}
	}
}

func FuzzDecodeIdentityRecord(f *testing.F) {
	for _, s := range []string{`{"name":"bob","profile":"agent","active":true}`, `{"ids":["U"]}`, `{}`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if r, err := DecodeIdentityRecord(data); err == nil && r.Name == "" {
			t.Fatalf("decoded %q to a record without a name", data)
		}
		if r, err := DecodeNameRecord(data); err == nil {
			for _, id := range r.IDs {
				if !IsToken(id) {
					t.Fatalf("decoded %q to a name record holding %q", data, id)
				}
			}
		}
	})
}
