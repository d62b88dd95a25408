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

	"github.com/cotal-go/cotal/broker"
	"github.com/cotal-go/cotal/space"
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
		want  func(*space.Options)
	}{
		{name: "defaults apply when nothing is set", want: func(*space.Options) {}},
		{
			name: "the file overrides the defaults",
			file: "listen: 127.0.0.1:5000\nspaces: [main, ops]\nsync: interval\nsync_interval: 30s\nlog:\n  level: debug\n",
			want: func(c *space.Options) {
				c.Listen, c.Spaces, c.Sync, c.SyncInterval = "127.0.0.1:5000", []string{"main", "ops"}, "interval", 30*time.Second
				c.Log.Level = "debug"
			},
		},
		{
			name: "the environment overrides the file",
			file: "listen: 127.0.0.1:5000\nlog:\n  level: debug\n",
			env:  []string{"COTAL_LISTEN=127.0.0.1:6000", "COTAL_LOG_LEVEL=warn"},
			want: func(c *space.Options) { c.Listen, c.Log.Level = "127.0.0.1:6000", "warn" },
		},
		{
			name:  "flags override the environment",
			file:  "listen: 127.0.0.1:5000\n",
			env:   []string{"COTAL_LISTEN=127.0.0.1:6000", "COTAL_SPACES=a,b"},
			flags: map[string]any{"listen": "127.0.0.1:7000", "spaces": []string{"c"}},
			want:  func(c *space.Options) { c.Listen, c.Spaces = "127.0.0.1:7000", []string{"c"} },
		},
		{
			name: "every environment variable reaches its key",
			env: []string{"COTAL_DIR=/srv/cotal", "COTAL_HTTP=127.0.0.1:8222", "COTAL_SPACES=main, ops",
				"COTAL_SYNC=interval", "COTAL_SYNC_INTERVAL=10s", "COTAL_OPEN=true", "COTAL_LOG_FORMAT=json",
				"COTAL_LOG_LEVEL=error", "COTAL_EXPIRY=1h"},
			want: func(c *space.Options) {
				c.Dir, c.HTTP, c.Spaces, c.Sync, c.SyncInterval = "/srv/cotal", "127.0.0.1:8222", []string{"main", "ops"}, "interval", 10*time.Second
				c.Open, c.Log, c.Expiry = true, space.LogOptions{Format: "json", Level: "error"}, time.Hour
			},
		},
		{
			name: "an empty COTAL_LISTEN turns the TCP listener off",
			env:  []string{"COTAL_LISTEN="},
			want: func(c *space.Options) { c.Listen = "" },
		},
		{
			name: "client variables such as COTAL_LINK and COTAL_CREDS do not disturb Load",
			env:  []string{"COTAL_LINK=cotal://localhost/main", "COTAL_CREDS=/tmp/alice.creds", "COTAL_NOPE=1"},
			want: func(*space.Options) {},
		},
		{
			name: "an empty file changes nothing",
			file: "# nothing set\n",
			want: func(*space.Options) {},
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

// TestLoadRoundTrip passes every key as a flag, written by Values; a key that does not reach
// its field comes back with its default and fails the comparison.
func TestLoadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	tlsFiles := space.TLSOptions{Cert: writeFile(t, dir, "cert.pem", "cert"), Key: writeFile(t, dir, "key.pem", "key")}
	base := space.Options{
		Dir: dir, Listen: "127.0.0.1:0", HTTP: "127.0.0.1:8222", Spaces: []string{"a", "b-2"}, TLS: tlsFiles,
		Sync: broker.SyncInterval, SyncInterval: 5 * time.Second, Log: space.LogOptions{Format: "json", Level: "debug"},
		Expiry: time.Minute,
		Limits: space.Limits{Connections: 20, ConnectionsPerIdentity: 7, Subscriptions: 30, Payload: 4096, SpaceBytes: 3 << 30,
			DMBytes: 2 << 20, TaskBytes: 3 << 20, PerSubject: 5, WatchConsumers: 40, WatchesPerIdentity: 3, ChannelsPerIdentity: 50,
			ViolationLogInterval: time.Minute},
	}
	tests := []struct {
		name string
		edit func(*space.Options)
	}{
		{"every top-level and limits key", func(o *space.Options) {
			o.Listen, o.HTTPPublic, o.Open, o.OpenInsecureBind = ":0", true, true, true
		}},
		{"logging every refusal", func(o *space.Options) { o.Limits.ViolationLogInterval = -1 }},
		{"a cluster node", func(o *space.Options) {
			o.Cluster = space.ClusterOptions{Name: "east", Listen: "127.0.0.1:6222", Peers: []string{"127.0.0.1:6222", "127.0.0.1:6223"},
				ServerName: "n1", Trust: "/t.json", Backstop: "/b.json", TLSCert: "/c.pem", TLSKey: "/k.pem", TLSCA: "/ca.pem"}
		}},
		{"a leaf", func(o *space.Options) {
			o.Leaf = space.LeafOptions{Hub: "nats-leaf://hub:7422", Creds: map[string]string{"a": "/a.creds", "b-2": "/b=2.creds"}}
		}},
		{"a hub", func(o *space.Options) { o.Leaf.Listen = "127.0.0.1:7422" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := base
			tt.edit(&want)
			got, err := Load(LoadOptions{Env: []string{}, Flags: Values(want)})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Load =\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

// TestAFileFromBeforeKeepsItsMeaning loads a cotal.yaml written for the loader's earlier
// Config type: its keys, and the two values space.Options holds in another form (a 0
// violation_log_interval, SPACE=FILE leaf credentials), must mean what they meant.
func TestAFileFromBeforeKeepsItsMeaning(t *testing.T) {
	dir := t.TempDir()
	got, err := Load(LoadOptions{File: filepath.Join("testdata", "before-one-options.yaml"), Env: []string{"HOME=" + dir},
		Flags: map[string]any{"dir": dir}})
	if err != nil {
		t.Fatal(err)
	}
	want := defaults(dir)
	want.Listen, want.Spaces, want.Sync, want.SyncInterval = "127.0.0.1:5222", []string{"main", "ops"}, broker.SyncInterval, 30*time.Second
	want.Log, want.Expiry = space.LogOptions{Format: "json", Level: "debug"}, 2*time.Hour
	want.Limits.Connections, want.Limits.ViolationLogInterval = 500, -1
	want.Leaf = space.LeafOptions{Hub: "nats-leaf://hub.example:7422", Creds: map[string]string{"main": "/k/main.creds", "ops": "/k/ops.creds"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Load =\n%+v\nwant\n%+v", got, want)
	}
}
