package cli

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/spf13/cobra"

	"github.com/cotal-go/cotal/broker"
	"github.com/cotal-go/cotal/config"
	"github.com/cotal-go/cotal/space"
)

// credsLifetime reads a .creds file and returns exp - iat of its user JWT (SPEC §9), to the minute.
func credsLifetime(t *testing.T, path string) time.Duration {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	token, err := jwt.ParseDecoratedJWT(data)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	claims, err := jwt.DecodeUserClaims(token)
	if err != nil {
		t.Fatalf("decode the user JWT of %s: %v", path, err)
	}
	// Rounded: the expiry is set before jwt's Encode stamps the issue time, and the two
	// seconds differ when the mint crosses a second boundary (1h29m59s for 90m).
	return (time.Duration(claims.Expires-claims.IssuedAt) * time.Second).Round(time.Minute)
}

// TestOfflineMintTakesExpiryFromConfig mints with no mesh running, where `cotal auth mint`
// opens the key store itself and its own configuration sets the default lifetime.
func TestOfflineMintTakesExpiryFromConfig(t *testing.T) {
	tests := []struct {
		name, file, env string
		args            []string
		want            time.Duration
	}{
		{name: "expiry: 2h in cotal.yaml mints a 2 h credential", file: "expiry: 2h\n", want: 2 * time.Hour},
		{name: "COTAL_EXPIRY overrides the file", file: "expiry: 2h\n", env: "3h", want: 3 * time.Hour},
		{name: "--expires-in overrides the configured expiry", file: "expiry: 2h\n",
			args: []string{"--expires-in", "90m"}, want: 90 * time.Minute},
		{name: "without an expiry key the credential lives 24 h", file: "# defaults only\n", want: 24 * time.Hour},
		{name: "expiry takes the flags' syntax: 1w is a week", file: "expiry: 1w\n", want: 7 * 24 * time.Hour},
		{name: "COTAL_EXPIRY takes it too: 1d12h", file: "# defaults only\n", env: "1d12h", want: 36 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "cotal.yaml"), []byte(tt.file), 0o600); err != nil {
				t.Fatal(err)
			}
			if tt.env != "" {
				t.Setenv("COTAL_EXPIRY", tt.env)
			}
			creds := filepath.Join(dir, "bob.creds")
			args := append([]string{"auth", "mint", "--dir", dir, "--name", "bob", "--out", creds}, tt.args...)
			checkRun(t, args, exitOK, nil, nil)
			if got := credsLifetime(t, creds); got != tt.want {
				t.Fatalf("user JWT exp - iat = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestRunningMeshMintsWithItsConfiguredExpiry starts `cotal up` on a data directory whose
// cotal.yaml says expiry: 2h and mints through it, as a user would.
func TestRunningMeshMintsWithItsConfiguredExpiry(t *testing.T) {
	bin := cotalBin(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cotal.yaml"), []byte("expiry: 2h\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	up := startUp(t, bin, dir)
	creds := filepath.Join(dir, "alice.creds")
	if _, stderr, code := runCotal(t, bin, "auth", "mint", "--dir", dir, "--name", "alice", "--out", creds); code != exitOK {
		t.Fatalf("mint while up runs: exit %d: %s", code, stderr)
	}
	if got := credsLifetime(t, creds); got != 2*time.Hour {
		t.Fatalf("user JWT exp - iat = %v, want 2h0m0s", got)
	}
	up.stop(t)
}

// TestUpFlagsReachTheirConfigKeys runs a command with `cotal up`'s flag map under the real
// root, so the persistent --log-* flags count too, and checks each set flag lands in its field.
func TestUpFlagsReachTheirConfigKeys(t *testing.T) {
	dir := t.TempDir()
	var got space.Options
	probe := &cobra.Command{Use: "probe", RunE: func(cmd *cobra.Command, _ []string) error {
		var err error
		got, err = loadConfig(cmd, upConfigFlags)
		return err
	}}
	up, _, err := newRootCmd(io.Discard, io.Discard).Find([]string{"up"})
	if err != nil {
		t.Fatal(err)
	}
	probe.Flags().AddFlagSet(up.Flags())
	root := newRootCmd(io.Discard, io.Discard)
	root.AddCommand(probe)
	root.SetArgs([]string{"probe", "--dir", dir, "--listen", "127.0.0.1:5999", "--http", "127.0.0.1:8999",
		"--space", "ops", "--space", "dev", "--sync", "interval", "--open",
		"--log-format", "json", "--log-level", "debug"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	want := config.Default()
	want.Dir, want.Listen, want.HTTP, want.Spaces = dir, "127.0.0.1:5999", "127.0.0.1:8999", []string{"ops", "dev"}
	want.Sync, want.Open, want.Log = broker.SyncInterval, true, space.LogOptions{Format: "json", Level: "debug"}
	got.Logger = nil // built from Log, which is compared
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("loaded %+v\nwant   %+v", got, want)
	}
	for flag := range upConfigFlags {
		if up.Flags().Lookup(flag) == nil && up.InheritedFlags().Lookup(flag) == nil {
			t.Errorf("upConfigFlags names --%s, which cotal up does not have", flag)
		}
	}
}

// TestConfigTyposAreNamedWithTheClosestKey: a mistyped key in cotal.yaml, a mistyped COTAL_
// variable and a size with a unit each say what was probably meant, and up --check says so
// before anything runs.
func TestConfigTyposAreNamedWithTheClosestKey(t *testing.T) {
	for _, tt := range []struct {
		name, file, env string
		code            int
		stderr          string
	}{
		{name: "a mistyped key suggests the key", file: "lsten: 127.0.0.1:4999\n", code: exitError,
			stderr: `unknown configuration key "lsten"; did you mean listen?`},
		{name: "a size with a unit says what sizes look like", file: "limits:\n  payload: 1GB\n", code: exitError,
			stderr: "key limits.payload: not a whole number: \"1GB\"; write counts as plain numbers and sizes in bytes"},
		{name: "a mistyped variable is warned about with the closest one", env: "COTAL_LSTEN", code: exitOK,
			stderr: "warning: COTAL_LSTEN is not a cotal variable and is ignored; did you mean COTAL_LISTEN?"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.file != "" {
				if err := os.WriteFile(filepath.Join(dir, "cotal.yaml"), []byte(tt.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tt.env != "" {
				t.Setenv(tt.env, "127.0.0.1:4999")
			}
			checkRun(t, []string{"up", "--check", "--dir", dir}, tt.code, nil, []string{tt.stderr})
		})
	}
}
