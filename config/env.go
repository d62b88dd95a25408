package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/knadh/koanf/providers/env/v2"

	"github.com/cotal-go/cotal/internal/suggest"
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

// UnknownEnv returns a warning for each COTAL_* variable of environ that names no
// configuration key and is not one of also (the variables client commands read, such as
// COTAL_LINK), with the closest known variable: Load skips such a variable, so a typo like
// COTAL_LSTEN would otherwise leave the default in place without a word.
func UnknownEnv(environ []string, also ...string) []string {
	known := configKeys()
	var names []string // compared without the prefix every name shares
	for _, name := range also {
		names = append(names, strings.TrimPrefix(name, envPrefix))
	}
	for key := range known.leaves {
		names = append(names, strings.TrimPrefix(envName(key), envPrefix))
	}
	var warnings []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, envPrefix) || envKey(name, known) != "" || slices.Contains(also, name) {
			continue
		}
		warnings = append(warnings, fmt.Sprintf("%s is not a cotal variable and is ignored%s",
			name, suggest.DidYouMean(suggest.Prefixed(envPrefix, suggest.Close(strings.TrimPrefix(name, envPrefix), names)))))
	}
	slices.Sort(warnings)
	return slices.Compact(warnings)
}

// envName is the variable that sets key: tls.cert is COTAL_TLS_CERT.
func envName(key string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
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
