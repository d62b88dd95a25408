package config

import (
	"strings"

	"github.com/knadh/koanf/providers/env/v2"
)

// envPrefix starts every variable Load reads.
const envPrefix = "COTAL_"

// envProvider reads the COTAL_* variables of environ that name a key of known, following the
// rule in the package doc; every other variable is skipped.
func envProvider(environ []string, known keySet) *env.Env {
	return env.Provider(".", env.Opt{
		Prefix:      envPrefix,
		EnvironFunc: func() []string { return environ },
		TransformFunc: func(name, value string) (string, any) {
			key := envKey(name, known)
			if key == "spaces" {
				return key, splitList(value)
			}
			return key, value
		},
	})
}

// envKey maps COTAL_TLS_CERT to tls.cert and COTAL_SYNC_INTERVAL to sync_interval, or returns
// "" when the variable names no key.
func envKey(name string, known keySet) string {
	key := strings.ToLower(strings.TrimPrefix(name, envPrefix))
	if section, rest, ok := strings.Cut(key, "_"); ok && known.sections[section] {
		key = section + "." + rest
	}
	if !known.leaves[key] {
		return ""
	}
	return key
}

// splitList reads "main, ops" as [main ops]; an empty value is an empty list, which Validate
// rejects, rather than a list holding one empty name.
func splitList(value string) []string {
	if value == "" {
		return []string{}
	}
	items := strings.Split(value, ",")
	for i, item := range items {
		items[i] = strings.TrimSpace(item)
	}
	return items
}
