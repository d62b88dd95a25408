package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/v2"

	"github.com/cotal-go/cotal/internal/local"
	"github.com/cotal-go/cotal/space"
)

// FileName is the configuration file Load looks for in the data directory.
const FileName = "cotal.yaml"

// LoadOptions says where Load finds each layer.
type LoadOptions struct {
	// File is an explicit configuration file (--config); it must exist.
	File string
	// Dir is where to look for cotal.yaml when File is empty; a missing file there is fine.
	// When Dir is empty too, Load looks in the data directory that Flags, the environment
	// or DefaultDir give, in that order.
	Dir string
	// Env is the environment as os.Environ returns it; nil means os.Environ(). The default
	// data directory derives from it too ($HOME, $XDG_DATA_HOME, %LocalAppData%), so tests
	// that pass their own stay hermetic.
	Env []string
	// Flags are overrides from parsed flags keyed by koanf path ("listen", "tls.cert",
	// "spaces"). Pass only the flags the user set, or a flag's default would override the
	// file and the environment.
	Flags map[string]any
}

// layer is one source of configuration, named for error messages.
type layer struct {
	name     string
	provider koanf.Provider
	parser   koanf.Parser
	// strict makes a key space.Options does not have an error.
	strict bool
}

// Load merges defaults < file < environment < flags into space.Options and validates them;
// on any error it returns the zero Options. Fields that are not configuration (Logger,
// Console, Memory...) are left zero for the caller to set. Errors name the layer they come from: the file's path,
// "COTAL_* environment" or "flags"; validation problems wrap ErrInvalid, and a file another
// user owns or may write is refused with ErrUnsafePath.
func Load(opts LoadOptions) (space.Options, error) {
	environ := opts.Env
	if environ == nil {
		environ = os.Environ()
	}
	getenv := lookup(environ)
	dir, _ := dataDir(runtime.GOOS, getenv)
	known := configKeys()

	layers := []layer{{name: "defaults", provider: confmap.Provider(Values(defaults(dir)), ".")}}
	if fileLayer := findFile(opts, getenv, dir); fileLayer != nil {
		layers = append(layers, *fileLayer)
	}
	layers = append(layers, layer{name: "COTAL_* environment", provider: envProvider(environ, known)})
	if len(opts.Flags) > 0 {
		layers = append(layers, layer{name: "flags", provider: confmap.Provider(opts.Flags, "."), strict: true})
	}

	merged := koanf.New(".")
	for _, l := range layers {
		k, err := l.load(known)
		if err != nil {
			return space.Options{}, err
		}
		if err := merged.Merge(k); err != nil {
			return space.Options{}, fmt.Errorf("%s: %w", l.name, err)
		}
	}
	var c space.Options
	if err := decode(merged, &c); err != nil {
		return space.Options{}, fmt.Errorf("decoding configuration: %w", err)
	}
	if err := Validate(c); err != nil {
		return space.Options{}, err
	}
	return c, nil
}

// findFile returns the file layer, or nil when no file is named and none exists where Load
// looks: opts.Dir, else the data directory a flag or COTAL_DIR sets, else defaultDir.
func findFile(opts LoadOptions, getenv func(string) string, defaultDir string) *layer {
	path := opts.File
	if path == "" {
		dir := opts.Dir
		if flagDir, ok := opts.Flags["dir"].(string); dir == "" && ok {
			dir = flagDir
		}
		if dir == "" {
			dir = getenv(envPrefix + "DIR")
		}
		if dir == "" {
			dir = defaultDir
		}
		if dir == "" {
			return nil
		}
		path = filepath.Join(dir, FileName)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
	}
	return &layer{name: "config file " + path, provider: privateFile(path), parser: yaml.Parser(), strict: true}
}

// privateFile is a configuration file read under local.ReadPrivate's rule: a planted
// cotal.yaml could turn on open mode or move the listener (SPEC §9).
type privateFile string

// ReadBytes is the file's content, or ErrUnsafePath when another user could have written it.
func (p privateFile) ReadBytes() ([]byte, error) { return local.ReadPrivate(string(p)) }

// Read is not supported: the file is parsed from ReadBytes.
func (p privateFile) Read() (map[string]any, error) {
	return nil, errors.New("config file: Read is not supported; use ReadBytes with a parser")
}

// load reads one layer on its own, so that an unknown key or a value of the wrong type is
// reported against the layer that holds it.
func (l layer) load(known keySet) (*koanf.Koanf, error) {
	k := koanf.New(".")
	if err := k.Load(l.provider, l.parser); err != nil {
		return nil, fmt.Errorf("%s: %w", l.name, err)
	}
	if l.strict {
		for _, key := range k.Keys() {
			if !known.leaves[key] && !known.sections[key] {
				return nil, fmt.Errorf("%s: %w %q%s; known keys: %s", l.name, ErrUnknownKey, key, known.closest(key), known)
			}
		}
	}
	var scratch space.Options
	if err := decode(k, &scratch); err != nil {
		return nil, fmt.Errorf("%s: %w", l.name, err)
	}
	return k, nil
}

// decode unmarshals k into c, reading every duration key with ParseDuration and the file
// encodings Values writes: a limits.violation_log_interval of 0, which logs every refusal,
// becomes a negative interval, and leaf.creds' SPACE=FILE entries a map. A zero interval can
// only come from a layer that wrote it, since the defaults layer holds the default.
func decode(k *koanf.Koanf, c *space.Options) error {
	err := k.UnmarshalWithConf("", c, koanf.UnmarshalConf{DecoderConfig: &mapstructure.DecoderConfig{
		DecodeHook: mapstructure.ComposeDecodeHookFunc(durationHook, numberHook, credsHook), WeaklyTypedInput: true}})
	if c.Limits.ViolationLogInterval == 0 {
		c.Limits.ViolationLogInterval = -1
	}
	return err
}

// credsHook reads leaf.creds, the one map of space.Options, from its SPACE=FILE entries: a
// list in the file and the flags, one entry in COTAL_LEAF_CREDS. An entry that is not
// SPACE=FILE, or a space listed twice, is refused.
func credsHook(_, to reflect.Type, data any) (any, error) {
	if to != reflect.TypeFor[map[string]string]() {
		return data, nil
	}
	var entries []string
	switch v := data.(type) {
	case string:
		entries = []string{v}
	case []string:
		entries = v
	case []any:
		for _, e := range v {
			entries = append(entries, fmt.Sprint(e))
		}
	default:
		return data, nil
	}
	if len(entries) == 0 {
		return map[string]string(nil), nil
	}
	creds := make(map[string]string, len(entries))
	for _, e := range entries {
		s, file, ok := strings.Cut(e, "=")
		switch {
		case !ok || s == "" || file == "":
			return nil, fieldError{leafCreds, fmt.Sprintf("%q is not SPACE=FILE; use e.g. main=/path/to/leaf.creds", e)}
		case creds[s] != "":
			return nil, fieldError{leafCreds, fmt.Sprintf("space %s is listed twice; keep one file per space", s)}
		}
		creds[s] = file
	}
	return creds, nil
}

// numberHook refuses a count or size written with a unit or as words before mapstructure's
// own conversion would, so the message says what a number looks like instead of quoting
// strconv. Every integer key is a plain number: sizes are bytes.
func numberHook(_, to reflect.Type, data any) (any, error) {
	v, ok := data.(string)
	if !ok || v == "" || to.Kind() < reflect.Int || to.Kind() > reflect.Uint64 || to == reflect.TypeFor[time.Duration]() {
		return data, nil
	}
	if _, err := strconv.ParseInt(strings.TrimSpace(v), 0, 64); err != nil {
		return nil, fmt.Errorf("%w: %q; write counts as plain numbers and sizes in bytes without a unit, "+
			"e.g. 1048576 for 1 MiB or 1073741824 for 1 GiB", ErrBadNumber, v)
	}
	return data, nil
}

// lookup is os.Getenv over environ; the last assignment of a name wins, as in os/exec.
func lookup(environ []string) func(string) string {
	vars := make(map[string]string, len(environ))
	for _, kv := range environ {
		if name, value, ok := strings.Cut(kv, "="); ok {
			vars[name] = value
		}
	}
	return func(name string) string { return vars[name] }
}
