package config

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/cotal-go/cotal/broker"
	"github.com/cotal-go/cotal/internal/suggest"
	"github.com/cotal-go/cotal/space"
)

// Errors Load and Validate return.
var (
	// ErrInvalid is wrapped by every problem Validate reports.
	ErrInvalid = errors.New("invalid configuration")
	// ErrUnknownKey means the file or the flag overrides name a key space.Options does not have.
	ErrUnknownKey = errors.New("unknown configuration key")
	// ErrBadNumber means a count or a size in bytes is not a whole number ("1GB").
	ErrBadNumber = errors.New("not a whole number")
)

// Default returns the loader's defaults, documented on each field of space.Options. Dir is ""
// when the user's data directory cannot be determined (see DefaultDir); Validate then asks
// for one.
func Default() space.Options {
	dir, _ := DefaultDir()
	return defaults(dir)
}

// defaults are where the loader's defaults differ from what Start makes of a zero field:
// Start's zero Listen, Dir and Log mean no listener, a temporary directory and no log, which
// `cotal up` must not default to. The rest are spelled out so `cotal config` shows them.
func defaults(dir string) space.Options {
	limits := space.DefaultLimits()
	limits.FloodCheck = 0 // not configuration: Start takes its default
	return space.Options{
		Dir:          dir,
		Listen:       "127.0.0.1:4222",
		Spaces:       []string{"main"},
		Sync:         broker.SyncAlways,
		SyncInterval: 2 * time.Minute,
		Log:          space.LogOptions{Format: "text", Level: "info"},
		Expiry:       24 * time.Hour,
		Limits:       limits,
	}
}

// Values is o keyed by koanf path ("tls.cert"), each value as cotal.yaml writes it: the keys
// are exactly those Load accepts, and loading the values gives o back. Two fields are written
// differently from their Go value: Limits.ViolationLogInterval, whose "every refusal" is
// negative in Go and 0 in the file (so a 0 in a file from before keeps its meaning), and
// Leaf.Creds, a map in Go and a list of SPACE=FILE entries in the file.
func Values(o space.Options) map[string]any {
	out := map[string]any{}
	flatten("", reflect.ValueOf(o), out)
	switch d := o.Limits.ViolationLogInterval; {
	case d < 0:
		out[violationLogInterval] = time.Duration(0)
	case d == 0:
		out[violationLogInterval] = space.DefaultLimits().ViolationLogInterval
	}
	creds := []string{}
	for _, s := range slices.Sorted(maps.Keys(o.Leaf.Creds)) {
		creds = append(creds, s+"="+o.Leaf.Creds[s])
	}
	out[leafCreds] = creds
	return out
}

// The keys whose file encoding differs from their Go value (see Values).
const (
	violationLogInterval = "limits.violation_log_interval"
	leafCreds            = "leaf.creds"
)

// flatten puts each field of the struct v that has a koanf key into out under prefix + key,
// descending into sections; fields tagged "-" are not configuration.
func flatten(prefix string, v reflect.Value, out map[string]any) {
	for i := range v.NumField() {
		key := v.Type().Field(i).Tag.Get("koanf")
		if key == "" || key == "-" {
			continue
		}
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Struct:
			flatten(prefix+key+".", f, out)
		case reflect.String:
			out[prefix+key] = f.String() // broker.SyncMode as the string the file holds
		default:
			out[prefix+key] = f.Interface()
		}
	}
}

// keySet is the koanf paths Options has ("tls.cert") and the sections holding them ("tls").
type keySet struct {
	leaves, sections map[string]bool
}

func configKeys() keySet {
	k := keySet{leaves: map[string]bool{}, sections: map[string]bool{}}
	for key := range Values(space.Options{}) {
		k.leaves[key] = true
		if section, _, ok := strings.Cut(key, "."); ok {
			k.sections[section] = true
		}
	}
	return k
}

// closest is the "; did you mean ...?" of a key that is not in k, or "".
func (k keySet) closest(key string) string {
	return suggest.DidYouMean(suggest.Close(key, slices.Collect(maps.Keys(k.leaves))))
}

// String lists the keys sorted, for error messages.
func (k keySet) String() string {
	return strings.Join(slices.Sorted(maps.Keys(k.leaves)), ", ")
}
