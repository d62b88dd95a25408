package space_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"

	"github.com/cotal-go/cotal/broker"
	"github.com/cotal-go/cotal/config"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// configKeys lists the koanf keys of t's fields by reflection, sections joined with "."
// ("tls.cert"), so a key added to config.Config shows up here without anyone listing it.
func configKeys(t reflect.Type, prefix string) []string {
	var keys []string
	for f := range t.Fields() {
		key := prefix + f.Tag.Get("koanf")
		if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeFor[time.Duration]() {
			keys = append(keys, configKeys(f.Type, key+".")...)
			continue
		}
		keys = append(keys, key)
	}
	return keys
}

// keyRow sets one config key to a value other than its default, as a command-line flag
// would, and says whether that value reached the mapped Options (logs is where their logger
// writes).
type keyRow struct {
	flags  map[string]any
	landed func(o space.Options, logs *bytes.Buffer) bool
}

func keyRows(t *testing.T) map[string]keyRow {
	tlsDir := t.TempDir()
	cert, key := filepath.Join(tlsDir, "cert.pem"), filepath.Join(tlsDir, "key.pem")
	for _, p := range []string{cert, key} {
		if err := os.WriteFile(p, []byte("PEM"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tlsFlags := map[string]any{"tls.cert": cert, "tls.key": key}
	other := filepath.Join(tlsDir, "elsewhere")
	return map[string]keyRow{
		"dir": {map[string]any{"dir": other},
			func(o space.Options, _ *bytes.Buffer) bool { return o.Dir == other }},
		"listen": {map[string]any{"listen": "127.0.0.1:5999"},
			func(o space.Options, _ *bytes.Buffer) bool { return o.Listen == "127.0.0.1:5999" }},
		"http": {map[string]any{"http": "127.0.0.1:8999"},
			func(o space.Options, _ *bytes.Buffer) bool { return o.HTTP == "127.0.0.1:8999" }},
		"http_public": {map[string]any{"http_public": "true"},
			func(o space.Options, _ *bytes.Buffer) bool { return o.HTTPPublic }},
		"spaces": {map[string]any{"spaces": []string{"ops", "dev"}},
			func(o space.Options, _ *bytes.Buffer) bool { return slices.Equal(o.Spaces, []string{"ops", "dev"}) }},
		"tls.cert": {tlsFlags, func(o space.Options, _ *bytes.Buffer) bool { return o.TLSCert == cert }},
		"tls.key":  {tlsFlags, func(o space.Options, _ *bytes.Buffer) bool { return o.TLSKey == key }},
		"sync": {map[string]any{"sync": "interval"},
			func(o space.Options, _ *bytes.Buffer) bool { return o.Sync == broker.SyncInterval }},
		"sync_interval": {map[string]any{"sync_interval": "30s"},
			func(o space.Options, _ *bytes.Buffer) bool { return o.SyncInterval == 30*time.Second }},
		"open": {map[string]any{"open": "true"},
			func(o space.Options, _ *bytes.Buffer) bool { return o.Open }},
		"open_insecure_bind": {map[string]any{"open_insecure_bind": "true"},
			func(o space.Options, _ *bytes.Buffer) bool { return o.OpenInsecureBind }},
		"log.format": {map[string]any{"log.format": "json"}, func(o space.Options, logs *bytes.Buffer) bool {
			o.Logger.Info("probe")
			return json.Valid(bytes.TrimSpace(logs.Bytes()))
		}},
		"log.level": {map[string]any{"log.level": "debug"},
			func(o space.Options, _ *bytes.Buffer) bool {
				return o.Logger.Enabled(context.Background(), slog.LevelDebug)
			}},
		"cluster.name": {map[string]any{"cluster.name": "east", "cluster.listen": "127.0.0.1:6222", "cluster.peers": []string{"127.0.0.1:6222"}},
			func(o space.Options, _ *bytes.Buffer) bool { return o.Cluster.Name == "east" }},
		"cluster.listen": {map[string]any{"cluster.name": "east", "cluster.listen": "127.0.0.1:6333", "cluster.peers": []string{"127.0.0.1:6333"}},
			func(o space.Options, _ *bytes.Buffer) bool { return o.Cluster.Listen == "127.0.0.1:6333" }},
		"cluster.peers": {map[string]any{"cluster.name": "east", "cluster.listen": "127.0.0.1:6222", "cluster.peers": []string{"127.0.0.1:6222", "10.0.0.2:6222"}},
			func(o space.Options, _ *bytes.Buffer) bool {
				return slices.Equal(o.Cluster.Peers, []string{"127.0.0.1:6222", "10.0.0.2:6222"})
			}},
		"cluster.server_name": {map[string]any{"cluster.name": "east", "cluster.listen": "127.0.0.1:6222", "cluster.peers": []string{"127.0.0.1:6222"}, "cluster.server_name": "n1"},
			func(o space.Options, _ *bytes.Buffer) bool { return o.Cluster.ServerName == "n1" }},
		"cluster.trust": {map[string]any{"cluster.name": "east", "cluster.listen": "127.0.0.1:6222", "cluster.peers": []string{"127.0.0.1:6222"}, "cluster.trust": other},
			func(o space.Options, _ *bytes.Buffer) bool { return o.Cluster.Trust == other }},
		"cluster.backstop": {map[string]any{"cluster.name": "east", "cluster.listen": "127.0.0.1:6222", "cluster.peers": []string{"127.0.0.1:6222"}, "cluster.trust": other, "cluster.backstop": other},
			func(o space.Options, _ *bytes.Buffer) bool { return o.Cluster.Backstop == other }},
		"cluster.tls_cert": {map[string]any{"cluster.name": "east", "cluster.listen": "127.0.0.1:6222", "cluster.peers": []string{"127.0.0.1:6222"}, "cluster.tls_cert": other, "cluster.tls_key": other, "cluster.tls_ca": other},
			func(o space.Options, _ *bytes.Buffer) bool { return o.Cluster.TLSCert == other }},
		"cluster.tls_key": {map[string]any{"cluster.name": "east", "cluster.listen": "127.0.0.1:6222", "cluster.peers": []string{"127.0.0.1:6222"}, "cluster.tls_cert": other, "cluster.tls_key": other, "cluster.tls_ca": other},
			func(o space.Options, _ *bytes.Buffer) bool { return o.Cluster.TLSKey == other }},
		"cluster.tls_ca": {map[string]any{"cluster.name": "east", "cluster.listen": "127.0.0.1:6222", "cluster.peers": []string{"127.0.0.1:6222"}, "cluster.tls_cert": other, "cluster.tls_key": other, "cluster.tls_ca": other},
			func(o space.Options, _ *bytes.Buffer) bool { return o.Cluster.TLSCA == other }},
		"leaf.listen": {map[string]any{"leaf.listen": "127.0.0.1:7422"},
			func(o space.Options, _ *bytes.Buffer) bool { return o.Leaf.Listen == "127.0.0.1:7422" }},
		"leaf.hub": {map[string]any{"leaf.hub": "nats-leaf://hub:7422", "leaf.creds": []string{"main=" + other}},
			func(o space.Options, _ *bytes.Buffer) bool { return o.Leaf.Hub == "nats-leaf://hub:7422" }},
		"leaf.creds": {map[string]any{"leaf.hub": "nats-leaf://hub:7422", "leaf.creds": []string{"main=" + other}},
			func(o space.Options, _ *bytes.Buffer) bool { return o.Leaf.Creds["main"] == other }},
		"expiry": {map[string]any{"expiry": "2h"},
			func(o space.Options, _ *bytes.Buffer) bool { return o.Expiry == 2*time.Hour }},
		"limits.connections": {map[string]any{"limits.connections": 77},
			func(o space.Options, _ *bytes.Buffer) bool { return o.Limits.Connections == 77 }},
		"limits.connections_per_identity": {map[string]any{"limits.connections_per_identity": 11},
			func(o space.Options, _ *bytes.Buffer) bool { return o.Limits.ConnectionsPerIdentity == 11 }},
		"limits.subscriptions": {map[string]any{"limits.subscriptions": 88},
			func(o space.Options, _ *bytes.Buffer) bool { return o.Limits.Subscriptions == 88 }},
		"limits.payload": {map[string]any{"limits.payload": 4096},
			func(o space.Options, _ *bytes.Buffer) bool { return o.Limits.Payload == 4096 }},
		"limits.space_bytes": {map[string]any{"limits.space_bytes": 3 << 30},
			func(o space.Options, _ *bytes.Buffer) bool { return o.Limits.SpaceBytes == 3<<30 }},
		"limits.dm_bytes": {map[string]any{"limits.dm_bytes": 5 << 20},
			func(o space.Options, _ *bytes.Buffer) bool { return o.Limits.DMBytes == 5<<20 }},
		"limits.task_bytes": {map[string]any{"limits.task_bytes": 6 << 20},
			func(o space.Options, _ *bytes.Buffer) bool { return o.Limits.TaskBytes == 6<<20 }},
		"limits.per_subject": {map[string]any{"limits.per_subject": 9},
			func(o space.Options, _ *bytes.Buffer) bool { return o.Limits.PerSubject == 9 }},
		"limits.watch_consumers": {map[string]any{"limits.watch_consumers": 99},
			func(o space.Options, _ *bytes.Buffer) bool { return o.Limits.WatchConsumers == 99 }},
		"limits.watches_per_identity": {map[string]any{"limits.watches_per_identity": 5},
			func(o space.Options, _ *bytes.Buffer) bool { return o.Limits.WatchesPerIdentity == 5 }},
		"limits.channels_per_identity": {map[string]any{"limits.channels_per_identity": 77},
			func(o space.Options, _ *bytes.Buffer) bool { return o.Limits.ChannelsPerIdentity == 77 }},
		"limits.violation_log_interval": {map[string]any{"limits.violation_log_interval": "0s"},
			func(o space.Options, _ *bytes.Buffer) bool { return o.Limits.ViolationLogInterval < 0 }},
	}
}

// config refuses limits.space_bytes below what the streams take exactly where the mesh would:
// its floor is wire.StreamLimits.Total.
func TestConfigSpaceBytesFloorIsTheLayouts(t *testing.T) {
	c := config.Default()
	c.Dir = t.TempDir()
	c.Limits.DMBytes, c.Limits.TaskBytes = 8<<20, 4<<20
	l := wire.DefaultStreamLimits()
	l.DMBytes, l.TaskBytes = c.Limits.DMBytes, c.Limits.TaskBytes
	c.Limits.SpaceBytes = l.Total()
	if err := c.Validate(); err != nil {
		t.Fatalf("space_bytes equal to the streams' total %d: %v", l.Total(), err)
	}
	c.Limits.SpaceBytes--
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "limits.space_bytes") {
		t.Fatalf("space_bytes one below the streams' total: %v; want a limits.space_bytes problem", err)
	}
}

// The defaults config documents are the defaults a zero space.Options takes.
func TestConfigDefaultLimitsAreTheMeshDefaults(t *testing.T) {
	c := config.Default()
	c.Dir = t.TempDir()
	if got := space.OptionsFromConfig(c, nil).Limits; got != space.DefaultLimits() {
		t.Fatalf("config.Default() limits map to %+v; space.DefaultLimits() is %+v", got, space.DefaultLimits())
	}
}

// TestOptionsFromConfigCarriesEveryKey loads each key of config.Config through config.Load,
// as `cotal up` does, and checks that OptionsFromConfig carries it. A key without a row fails,
// and so does a row whose value the defaults already satisfy, since it would prove nothing.
func TestOptionsFromConfigCarriesEveryKey(t *testing.T) {
	home := t.TempDir()
	load := func(t *testing.T, flags map[string]any) config.Config {
		t.Helper()
		c, err := config.Load(config.LoadOptions{Dir: home, Env: []string{"HOME=" + home}, Flags: flags})
		if err != nil {
			t.Fatalf("load %v: %v", flags, err)
		}
		return c
	}
	rows := keyRows(t)
	keys := configKeys(reflect.TypeFor[config.Config](), "")
	for _, key := range keys {
		t.Run("config key "+key+" reaches space.Options", func(t *testing.T) {
			row, ok := rows[key]
			if !ok {
				t.Fatalf("no row for config key %q: map it in space.OptionsFromConfig and add a row here", key)
			}
			var defaultLogs, logs bytes.Buffer
			if row.landed(space.OptionsFromConfig(load(t, nil), &defaultLogs), &defaultLogs) {
				t.Fatalf("the defaults already pass the check for %q; pick a value other than the default", key)
			}
			if !row.landed(space.OptionsFromConfig(load(t, row.flags), &logs), &logs) {
				t.Fatalf("%v loaded but did not reach space.Options", row.flags)
			}
		})
	}
	for key := range rows {
		if !slices.Contains(keys, key) {
			t.Errorf("row %q names no key of config.Config (keys: %s)", key, strings.Join(keys, ", "))
		}
	}
}

// TestConfiguredExpiryReachesTheMintedJWT starts a mesh from a cotal.yaml and checks the
// lifetime of a credential minted with no expiry of its own in its user JWT (SPEC §9).
func TestConfiguredExpiryReachesTheMintedJWT(t *testing.T) {
	tests := []struct {
		name, file string
		want       time.Duration
	}{
		{"expiry: 2h in cotal.yaml mints a 2 h credential", "expiry: 2h\n", 2 * time.Hour},
		{"without an expiry key the credential lives 24 h", "# defaults only\n", 24 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, config.FileName), []byte("listen: \"\"\n"+tt.file), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(config.LoadOptions{Env: []string{"HOME=" + dir}, Flags: map[string]any{"dir": dir}})
			if err != nil {
				t.Fatal(err)
			}
			m := spacetest.New(t, func(o *space.Options) {
				*o = space.OptionsFromConfig(cfg, nil)
				o.Memory = true
			})
			cred := mintWith(t, m, provisioner.MintRequest{Space: "main", Name: "alice", Profile: provisioner.ProfileAgent})
			claims, err := jwt.DecodeUserClaims(cred.JWT)
			if err != nil {
				t.Fatalf("decode the minted user JWT: %v", err)
			}
			if got := time.Duration(claims.Expires-claims.IssuedAt) * time.Second; got != tt.want {
				t.Fatalf("user JWT exp - iat = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestMeshRunsWithTheConfiguredValues starts a mesh, on disk, from a cotal.yaml that changes
// most keys, and asks the running mesh for each value rather than its Options.
func TestMeshRunsWithTheConfiguredValues(t *testing.T) {
	dir := t.TempDir()
	file := "listen: 127.0.0.1:0\nhttp: 127.0.0.1:0\nspaces: [ops, dev]\nsync: interval\nsync_interval: 30s\nlog:\n  level: debug\n  format: json\n"
	if err := os.WriteFile(filepath.Join(dir, config.FileName), []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(config.LoadOptions{Env: []string{"HOME=" + dir}, Flags: map[string]any{"dir": dir}})
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	m := spacetest.New(t, func(o *space.Options) { *o = space.OptionsFromConfig(cfg, logs) })
	js := m.Broker().Server().JetStreamConfig()
	checks := []struct {
		name string
		ok   bool
	}{
		{"dir holds the key store", fileExists(filepath.Join(dir, provisioner.KeysFile))},
		{"spaces are the mesh's spaces", slices.Equal(m.Spaces(), []string{"dev", "ops"})},
		{"listen opens a TCP listener", m.Broker().Server().Addr() != nil},
		{"http serves monitoring", m.HTTPURL() != ""},
		{"sync and sync_interval set JetStream's fsync", js != nil && !js.SyncAlways && js.SyncInterval == 30*time.Second},
		{"log.format and log.level give JSON debug logs", strings.Contains(logs.String(), `"level":"DEBUG"`)},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: not so in the running mesh; logs:\n%s", c.name, logs)
		}
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// syncBuffer is a bytes.Buffer the mesh's goroutines may log into while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
