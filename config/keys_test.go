package config

import (
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knadh/koanf/parsers/yaml"

	"github.com/cotal-go/cotal/space"
)

// TestEveryFieldDecidesWhetherItIsAKey checks that every field of space.Options, in every
// section, has a koanf tag: a key, or "-" for what is not configuration. An untagged field
// would be neither a key Load accepts nor visibly left out.
func TestEveryFieldDecidesWhetherItIsAKey(t *testing.T) {
	var walk func(typ reflect.Type, prefix string)
	walk = func(typ reflect.Type, prefix string) {
		for f := range typ.Fields() {
			key, ok := f.Tag.Lookup("koanf")
			if !ok || key == "" {
				t.Errorf("%s%s has no koanf tag; give it its key in cotal.yaml, or \"-\"", prefix, f.Name)
			}
			if f.Type.Kind() == reflect.Struct && key != "-" {
				walk(f.Type, prefix+f.Name+".")
			}
		}
	}
	walk(reflect.TypeFor[space.Options](), "Options.")
}

// TestEveryKeyLands reads testdata/every-key.yaml, which sets every key to a value other than
// its default, and writes the decoded space.Options back with Values: each key must hold the
// fixture's value, so it landed in the field Values reads, and the fixture must name every
// key Load accepts.
func TestEveryKeyLands(t *testing.T) {
	known := configKeys()
	path := filepath.Join("testdata", "every-key.yaml")
	k, err := layer{name: path, provider: privateFile(path), parser: yaml.Parser(), strict: true}.load(known)
	if err != nil {
		t.Fatal(err)
	}
	var o space.Options
	if err := decode(k, &o); err != nil {
		t.Fatal(err)
	}
	got, byDefault := Values(o), Values(defaults(""))
	for _, key := range slices.Sorted(maps.Keys(known.leaves)) {
		if !k.Exists(key) {
			t.Errorf("%s: not in %s; add it with a value other than its default", key, path)
			continue
		}
		want := text(k.Get(key))
		if want == text(byDefault[key]) {
			t.Errorf("%s: %s in %s is its default, which proves nothing; pick another", key, want, path)
		}
		if text(got[key]) != want {
			t.Errorf("%s: %s in %s reads back as %s", key, want, path, text(got[key]))
		}
	}
}

// text writes a value of the file, or of Values, one way: durations and lists as the file
// writes them.
func text(v any) string {
	switch t := v.(type) {
	case time.Duration:
		return FormatDuration(t)
	case []string:
		return strings.Join(t, ",")
	case []any:
		items := make([]string, len(t))
		for i, item := range t {
			items[i] = text(item)
		}
		return strings.Join(items, ",")
	}
	return fmt.Sprint(v)
}
