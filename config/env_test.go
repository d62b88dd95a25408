package config

import (
	"slices"
	"testing"
)

func TestEnvKey(t *testing.T) {
	tests := []struct{ name, variable, want string }{
		{"a top-level key is lowercased", "COTAL_LISTEN", "listen"},
		{"an underscore after a section name separates the section", "COTAL_TLS_CERT", "tls.cert"},
		{"the log section nests the same way", "COTAL_LOG_LEVEL", "log.level"},
		{"an underscore inside a top-level key stays", "COTAL_SYNC_INTERVAL", "sync_interval"},
		{"the open-mode override is a top-level key", "COTAL_OPEN_INSECURE_BIND", "open_insecure_bind"},
		{"the limits section nests and keeps the key's own underscores", "COTAL_LIMITS_DM_BYTES", "limits.dm_bytes"},
		{"a client-only variable is ignored", "COTAL_LINK", ""},
		{"the credentials variable is ignored", "COTAL_CREDS", ""},
		{"a section alone is ignored", "COTAL_TLS", ""},
		{"an unknown key inside a section is ignored", "COTAL_TLS_CA", ""},
	}
	known := configKeys()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := envKey(tt.variable, known); got != tt.want {
				t.Fatalf("envKey(%q) = %q, want %q", tt.variable, got, tt.want)
			}
		})
	}
}

func TestSplitList(t *testing.T) {
	tests := []struct {
		name, value string
		want        []string
	}{
		{"an empty value is an empty list", "", []string{}},
		{"one name is a list of one", "main", []string{"main"}},
		{"spaces around commas are trimmed", "main, ops ,dev", []string{"main", "ops", "dev"}},
		{"an empty item is kept for Validate to name", "main,,ops", []string{"main", "", "ops"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := splitList(tt.value); !slices.Equal(got, tt.want) {
				t.Fatalf("splitList(%q) = %q, want %q", tt.value, got, tt.want)
			}
		})
	}
}

func TestUnknownEnv(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		want    []string
	}{
		{"a typo of a key is named with the closest variable", []string{"COTAL_LSTEN=127.0.0.1:4999"},
			[]string{"COTAL_LSTEN is not a cotal variable and is ignored; did you mean COTAL_LISTEN?"}},
		{"a known key is no warning", []string{"COTAL_LISTEN=x", "COTAL_TLS_CERT=c.pem"}, nil},
		{"a client variable passed as also is no warning", []string{"COTAL_LINK=cotal://h/main"}, nil},
		{"a typo of a client variable suggests it", []string{"COTAL_CRED=x.creds"},
			[]string{"COTAL_CRED is not a cotal variable and is ignored; did you mean COTAL_CREDS?"}},
		{"other variables are none of cotal's business", []string{"HOME=/root", "XCOTAL_LSTEN=1"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := UnknownEnv(tt.environ, "COTAL_LINK", "COTAL_CREDS"); !slices.Equal(got, tt.want) {
				t.Fatalf("UnknownEnv(%q) = %q, want %q", tt.environ, got, tt.want)
			}
		})
	}
}
