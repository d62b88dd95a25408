package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

// writeFile writes content to dir/name and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadPrecedence(t *testing.T) {
	tests := []struct {
		name  string
		file  string // cotal.yaml in the search dir; "" writes none
		env   []string
		flags map[string]any
		want  func(*Config)
	}{
		{name: "defaults apply when nothing is set", want: func(*Config) {}},
		{
			name: "the file overrides the defaults",
			file: "listen: 127.0.0.1:5000\nspaces: [main, ops]\nsync: interval\nsync_interval: 30s\nlog:\n  level: debug\n",
			want: func(c *Config) {
				c.Listen, c.Spaces, c.Sync, c.SyncInterval = "127.0.0.1:5000", []string{"main", "ops"}, "interval", 30*time.Second
				c.Log.Level = "debug"
			},
		},
		{
			name: "the environment overrides the file",
			file: "listen: 127.0.0.1:5000\nlog:\n  level: debug\n",
			env:  []string{"COTAL_LISTEN=127.0.0.1:6000", "COTAL_LOG_LEVEL=warn"},
			want: func(c *Config) { c.Listen, c.Log.Level = "127.0.0.1:6000", "warn" },
		},
		{
			name:  "flags override the environment",
			file:  "listen: 127.0.0.1:5000\n",
			env:   []string{"COTAL_LISTEN=127.0.0.1:6000", "COTAL_SPACES=a,b"},
			flags: map[string]any{"listen": "127.0.0.1:7000", "spaces": []string{"c"}},
			want:  func(c *Config) { c.Listen, c.Spaces = "127.0.0.1:7000", []string{"c"} },
		},
		{
			name: "every environment variable reaches its key",
			env: []string{"COTAL_DIR=/srv/cotal", "COTAL_HTTP=127.0.0.1:8222", "COTAL_SPACES=main, ops",
				"COTAL_SYNC=interval", "COTAL_SYNC_INTERVAL=10s", "COTAL_OPEN=true", "COTAL_LOG_FORMAT=json",
				"COTAL_LOG_LEVEL=error", "COTAL_EXPIRY=1h"},
			want: func(c *Config) {
				c.Dir, c.HTTP, c.Spaces, c.Sync, c.SyncInterval = "/srv/cotal", "127.0.0.1:8222", []string{"main", "ops"}, "interval", 10*time.Second
				c.Open, c.Log, c.Expiry = true, Log{Format: "json", Level: "error"}, time.Hour
			},
		},
		{
			name: "an empty COTAL_LISTEN turns the TCP listener off",
			env:  []string{"COTAL_LISTEN="},
			want: func(c *Config) { c.Listen = "" },
		},
		{
			name: "client variables such as COTAL_LINK and COTAL_CREDS do not disturb Load",
			env:  []string{"COTAL_LINK=cotal://localhost/main", "COTAL_CREDS=/tmp/alice.creds", "COTAL_NOPE=1"},
			want: func(*Config) {},
		},
		{
			name: "an empty file changes nothing",
			file: "# nothing set\n",
			want: func(*Config) {},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.file != "" {
				writeFile(t, dir, FileName, tt.file)
			}
			env := append([]string{"HOME=" + dir}, tt.env...)
			want := defaults(mustDataDir(t, env))
			tt.want(&want)

			got, err := Load(LoadOptions{Dir: dir, Env: env, Flags: tt.flags})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Load =\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

func mustDataDir(t *testing.T, env []string) string {
	t.Helper()
	dir, err := dataDir(runtime.GOOS, lookup(env))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestLoadFindsTheFile(t *testing.T) {
	tests := []struct {
		name string
		// inDataDir writes the file into the default data dir instead of a directory of its own.
		inDataDir bool
		opts      func(dir, file string) LoadOptions
	}{
		{name: "an explicit file is read", opts: func(_, file string) LoadOptions { return LoadOptions{File: file} }},
		{name: "an explicit file wins over the search dir", opts: func(_, file string) LoadOptions {
			return LoadOptions{File: file, Dir: t.TempDir()}
		}},
		{name: "the search dir is read", opts: func(dir, _ string) LoadOptions { return LoadOptions{Dir: dir} }},
		{name: "the dir flag is searched when no dir is given", opts: func(dir, _ string) LoadOptions {
			return LoadOptions{Flags: map[string]any{"dir": dir}}
		}},
		{name: "COTAL_DIR is searched when no dir is given", opts: func(dir, _ string) LoadOptions {
			return LoadOptions{Env: []string{"COTAL_DIR=" + dir}}
		}},
		{name: "the default data dir is searched last", inDataDir: true, opts: func(string, string) LoadOptions {
			return LoadOptions{}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			homeEnv := []string{"HOME=" + home, "XDG_DATA_HOME=" + home, "LocalAppData=" + home}
			dir := t.TempDir()
			if tt.inDataDir {
				dir = mustDataDir(t, homeEnv)
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			opts := tt.opts(dir, writeFile(t, dir, FileName, "listen: 127.0.0.1:4999\n"))
			opts.Env = append(opts.Env, homeEnv...)
			c, err := Load(opts)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if c.Listen != "127.0.0.1:4999" {
				t.Fatalf("Listen = %q; the file was not read", c.Listen)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name     string
		file     string // written as the explicit file when not ""
		env      []string
		flags    map[string]any
		is       error  // wrapped sentinel, if any
		contains string // besides the layer name
		layer    string // "file" means the file's path
	}{
		{name: "a YAML syntax error names the file", file: "listen: [unclosed\n", contains: "yaml", layer: "file"},
		{name: "an unknown key in the file names the file and the key", file: "listn: 127.0.0.1:4222\n",
			is: ErrUnknownKey, contains: `"listn"`, layer: "file"},
		{name: "an unknown key in the file suggests the closest key", file: "lsten: 127.0.0.1:4222\n",
			is: ErrUnknownKey, contains: `"lsten"; did you mean listen?`, layer: "file"},
		{name: "a size with a unit says what a size looks like", file: "limits:\n  payload: 1GB\n",
			is: ErrBadNumber, contains: "sizes in bytes without a unit", layer: "file"},
		{name: "a count in words in the environment says what a number looks like", env: []string{"COTAL_LIMITS_CONNECTIONS=many"},
			is: ErrBadNumber, contains: `"many"`, layer: "COTAL_* environment"},
		{name: "an unknown key inside a section is caught", file: "tls:\n  ca: x.pem\n",
			is: ErrUnknownKey, contains: `"tls.ca"`, layer: "file"},
		{name: "a value of the wrong type names the file", file: "open: maybe\n", contains: "open", layer: "file"},
		{name: "a bad duration in the environment names the environment", env: []string{"COTAL_EXPIRY=soon"},
			contains: "expiry", layer: "COTAL_* environment"},
		{name: "an unknown flag key names the flags", flags: map[string]any{"listn": "x"},
			is: ErrUnknownKey, contains: `"listn"`, layer: "flags"},
		{name: "an invalid result is a validation error", env: []string{"COTAL_SYNC=sometimes"},
			is: ErrInvalid, contains: `sync: "sometimes" is not a sync mode; use always or interval`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := LoadOptions{Dir: dir, Env: append([]string{"HOME=" + dir}, tt.env...), Flags: tt.flags}
			if tt.file != "" {
				opts.File = writeFile(t, dir, "explicit.yaml", tt.file)
			}
			_, err := Load(opts)
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %q does not wrap %v", err, tt.is)
			}
			layer := tt.layer
			if layer == "file" {
				layer = opts.File
			}
			for _, want := range []string{tt.contains, layer} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestLoadMissingExplicitFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent.yaml")
	_, err := Load(LoadOptions{File: path, Env: []string{}})
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Load = %v; want a not-exist error naming %s", err, path)
	}
}

// TestLoadRoundTrip passes every key as a flag; a field missing from values, or a key that
// does not reach its field, comes back with its default and fails the comparison.
func TestLoadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	want := Config{
		Dir:              dir,
		Listen:           ":0",
		HTTP:             "127.0.0.1:8222",
		Spaces:           []string{"a", "b-2"},
		TLS:              TLS{Cert: writeFile(t, dir, "cert.pem", "cert"), Key: writeFile(t, dir, "key.pem", "key")},
		Sync:             "interval",
		SyncInterval:     5 * time.Second,
		Open:             true,
		OpenInsecureBind: true,
		Log:              Log{Format: "json", Level: "debug"},
		Expiry:           time.Minute,
		Limits: Limits{Connections: 20, ConnectionsPerIdentity: 7, Subscriptions: 30, Payload: 4096, SpaceBytes: 3 << 30,
			DMBytes: 2 << 20, TaskBytes: 3 << 20, PerSubject: 5, WatchConsumers: 40, WatchesPerIdentity: 3, ChannelsPerIdentity: 50,
			ViolationLogInterval: time.Minute},
	}
	got, err := Load(LoadOptions{Env: []string{}, Flags: want.values()})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Load =\n%+v\nwant\n%+v", got, want)
	}
}
