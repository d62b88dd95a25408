package space_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"

	"github.com/cotal-go/cotal/config"
	"github.com/cotal-go/cotal/internal/testlog"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// TestLimitsValidate checks the floors of Limits where both the loader and Start apply them:
// a zero field is its default, and a space's storage must hold exactly what its streams take
// (wire.StreamLimits.Total).
func TestLimitsValidate(t *testing.T) {
	total := func(dm, task int64) int64 {
		l := wire.DefaultStreamLimits()
		l.DMBytes, l.TaskBytes = dm, task
		return l.Total()
	}
	tests := []struct {
		name   string
		limits space.Limits
		want   string // "" means valid
	}{
		{"the zero Limits is the defaults", space.Limits{}, ""},
		{"the defaults are valid", space.DefaultLimits(), ""},
		{"space storage equal to its streams' total is valid",
			space.Limits{DMBytes: 8 << 20, TaskBytes: 4 << 20, SpaceBytes: total(8<<20, 4<<20)}, ""},
		{"space storage one byte short is refused",
			space.Limits{DMBytes: 8 << 20, TaskBytes: 4 << 20, SpaceBytes: total(8<<20, 4<<20) - 1}, "limits.space_bytes"},
		{"logging every refusal is valid", space.Limits{ViolationLogInterval: -1}, ""},
		{"a limit below its floor is refused, naming its key", space.Limits{Connections: 5},
			"limits.connections: 5 is below the least useful value 10"},
		{"a negative limit is refused", space.Limits{WatchesPerIdentity: -1}, "limits.watches_per_identity: -1 is below"},
		{"a payload above the broker's maximum is refused", space.Limits{Payload: 2 << 20}, "limits.payload"},
		{"a negative handoff bound is refused", space.Limits{HandoffPerSubject: -1}, "HandoffPerSubject"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.limits.Validate()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

// Start refuses a limit below its floor with Limits.Validate's problem, before it creates
// anything.
func TestStartRefusesALimitBelowItsFloor(t *testing.T) {
	_, err := space.Start(t.Context(), space.Options{Memory: true, Limits: space.Limits{Subscriptions: 3}})
	if err == nil || !strings.Contains(err.Error(), "limits.subscriptions: 3 is below") {
		t.Fatalf("Start = %v; want the limits.subscriptions floor", err)
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
				*o = cfg
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
	logs := &testlog.Buffer{}
	cfg.Logger = cfg.Log.Logger(logs)
	m := spacetest.New(t, func(o *space.Options) { *o = cfg })
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
