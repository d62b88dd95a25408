package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// fieldKeys lists the koanf keys of t's fields by reflection, sections joined with "."
// ("tls.cert").
func fieldKeys(t reflect.Type, prefix string) []string {
	var keys []string
	for f := range t.Fields() {
		key := prefix + f.Tag.Get("koanf")
		if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeFor[time.Duration]() {
			keys = append(keys, fieldKeys(f.Type, key+".")...)
			continue
		}
		keys = append(keys, key)
	}
	return keys
}

// TestEveryFieldIsAKey checks that Load accepts exactly the keys Config's fields declare: a
// field missing from values() could never be set from the file or the environment.
func TestEveryFieldIsAKey(t *testing.T) {
	fields := fieldKeys(reflect.TypeFor[Config](), "")
	slices.Sort(fields)
	if got := configKeys().String(); got != strings.Join(fields, ", ") {
		t.Fatalf("Load accepts %s\nConfig's fields are %s", got, strings.Join(fields, ", "))
	}
}
