package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cotal-go/cotal/space"
)

func TestDefaultIsValid(t *testing.T) {
	if err := Validate(defaults(t.TempDir())); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
}

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	pem := filepath.Join(dir, "x.pem")
	if err := os.WriteFile(pem, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	absent := filepath.Join(dir, "absent.pem")
	tests := []struct {
		name   string
		change func(*space.Options)
		want   string // "" means valid
	}{
		{"no TCP listener is allowed", func(c *space.Options) { c.Listen = "" }, ""},
		{"port 0 on every interface is allowed", func(c *space.Options) { c.Listen = ":0" }, ""},
		{"an IPv6 listener is allowed", func(c *space.Options) { c.Listen = "[::1]:4222" }, ""},
		{"TLS with both files is allowed", func(c *space.Options) { c.TLS = space.TLSOptions{Cert: pem, Key: pem} }, ""},
		{"an empty dir is refused", func(c *space.Options) { c.Dir = "" }, "dir: empty"},
		{"a listener without a port is refused", func(c *space.Options) { c.Listen = "localhost" },
			`listen: "localhost" is not host:port`},
		{"a named port is refused", func(c *space.Options) { c.Listen = "localhost:nats" },
			`port "nats" is not a number`},
		{"a port past 65535 is refused", func(c *space.Options) { c.HTTP = "127.0.0.1:70000" },
			`http: "127.0.0.1:70000" is not host:port`},
		{"no spaces are refused", func(c *space.Options) { c.Spaces = nil }, "spaces: none given"},
		{"an empty space name is refused", func(c *space.Options) { c.Spaces = []string{"main", ""} },
			"spaces: name 2 is empty"},
		{"a space Sanitize would change is refused with the sanitized form", func(c *space.Options) { c.Spaces = []string{"team.a"} },
			`spaces: "team.a" is not a space token (SPEC §3); use only letters, digits, _ and -, e.g. "team_a"`},
		{"a duplicate space is refused", func(c *space.Options) { c.Spaces = []string{"main", "main"} },
			`spaces: "main" is listed twice`},
		{"a cert without a key is refused", func(c *space.Options) { c.TLS.Cert = pem }, "tls: cert is set but key is not"},
		{"a key without a cert is refused", func(c *space.Options) { c.TLS.Key = pem }, "tls: key is set but cert is not"},
		{"a missing cert file is refused", func(c *space.Options) { c.TLS = space.TLSOptions{Cert: absent, Key: pem} },
			"tls.cert: stat " + absent},
		{"a directory as key is refused", func(c *space.Options) { c.TLS = space.TLSOptions{Cert: pem, Key: dir} },
			"tls.key: " + dir + " is a directory"},
		{"open mode on a loopback IPv4 listener is allowed", func(c *space.Options) { c.Open, c.Listen = true, "127.0.0.2:4222" }, ""},
		{"open mode on the IPv6 loopback is allowed", func(c *space.Options) { c.Open, c.Listen = true, "[::1]:4222" }, ""},
		{"open mode on localhost is allowed", func(c *space.Options) { c.Open, c.Listen = true, "localhost:4222" }, ""},
		{"open mode with no TCP listener is allowed", func(c *space.Options) { c.Open, c.Listen = true, "" }, ""},
		{"open mode on every interface is refused, naming the override", func(c *space.Options) { c.Open, c.Listen = true, "0.0.0.0:4222" },
			`listen: "0.0.0.0:4222" listens beyond loopback while open is true`},
		{"open mode on an empty host is refused", func(c *space.Options) { c.Open, c.Listen = true, ":4222" },
			"set open_insecure_bind: true to accept the exposure"},
		{"open mode on a host name is refused", func(c *space.Options) { c.Open, c.Listen = true, "mesh.example:4222" },
			`listen: "mesh.example:4222" listens beyond loopback`},
		{"open mode beyond loopback is allowed with open_insecure_bind", func(c *space.Options) {
			c.Open, c.Listen, c.OpenInsecureBind = true, "0.0.0.0:4222", true
		}, ""},
		{"a non-loopback listener with authentication is allowed", func(c *space.Options) { c.Listen = "0.0.0.0:4222" }, ""},
		{"an unknown sync mode is refused", func(c *space.Options) { c.Sync = "sometimes" },
			`sync: "sometimes" is not a sync mode; use always or interval`},
		{"a sub-second sync interval is refused", func(c *space.Options) { c.SyncInterval = time.Millisecond },
			"sync_interval: 1ms is too short"},
		{"an unknown log format is refused", func(c *space.Options) { c.Log.Format = "xml" },
			`log.format: "xml" is not a log format; use text or json`},
		{"an unknown log level is refused", func(c *space.Options) { c.Log.Level = "loud" },
			`log.level: "loud" is not a log level`},
		{"a zero expiry is refused", func(c *space.Options) { c.Expiry = 0 }, "expiry: 0s is too short"},
		{"logging every refusal is allowed", func(c *space.Options) { c.Limits.ViolationLogInterval = -1 }, ""},
		{"a zero limit takes its default", func(c *space.Options) { c.Limits.Subscriptions = 0 }, ""},
		{"too few connections for the mesh itself are refused", func(c *space.Options) { c.Limits.Connections = 2 },
			"limits.connections: 2 is below the least useful value 10"},
		{"a negative per-identity connection limit is refused", func(c *space.Options) { c.Limits.ConnectionsPerIdentity = -1 },
			"limits.connections_per_identity: -1 is below"},
		{"too few subscriptions are refused", func(c *space.Options) { c.Limits.Subscriptions = 5 }, "limits.subscriptions: 5 is below"},
		{"a payload above the broker's maximum is refused", func(c *space.Options) { c.Limits.Payload = 8 << 20 },
			"limits.payload: 8388608 is above the broker's own maximum"},
		{"a tiny DM stream is refused", func(c *space.Options) { c.Limits.DMBytes = 1000 }, "limits.dm_bytes: 1000 is below"},
		{"a negative per-subject limit is refused", func(c *space.Options) { c.Limits.PerSubject = -1 }, "limits.per_subject: -1 is below"},
		{"too few watch consumers are refused", func(c *space.Options) { c.Limits.WatchConsumers = 1 }, "limits.watch_consumers: 1 is below"},
		{"too few watches per identity are refused", func(c *space.Options) { c.Limits.WatchesPerIdentity = 1 }, "limits.watches_per_identity: 1 is below"},
		{"space storage below its DM and task streams is refused", func(c *space.Options) { c.Limits.SpaceBytes = 100 << 20 },
			"limits.space_bytes: 104857600 does not hold the space's streams"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := defaults(dir)
			tt.change(&c)
			err := Validate(c)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %v; want ErrInvalid mentioning %q", err, tt.want)
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	c := defaults(t.TempDir())
	c.Sync, c.Log.Level, c.Spaces = "sometimes", "loud", nil
	err := Validate(c)
	for _, key := range []string{"sync:", "log.level:", "spaces:"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("Validate = %v; want a problem with %s", err, key)
		}
	}
}
