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
