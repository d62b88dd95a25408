package space_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
)

// getWith is GET url with an Authorization header when auth is not "".
func getWith(t *testing.T, url, auth string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestMonitoringShowsIdentitiesOnlyWithTheToken covers docs/hostile-agents.md "A local user":
// nats-server's /connz?auth=1 shows every user JWT and /accountz every account, so an agent on
// the same machine must not read them from the monitoring port; health and metrics stay open.
func TestMonitoringShowsIdentitiesOnlyWithTheToken(t *testing.T) {
	dir := t.TempDir()
	m := spacetest.New(t, func(o *space.Options) { o.Dir, o.HTTP = dir, "127.0.0.1:0" })
	alice := mint(t, m, "alice", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}, AllowPublish: []string{"general"}})
	connect(t, m, alice)
	file, err := os.ReadFile(filepath.Join(dir, space.HTTPTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	token := m.HTTPToken()
	if len(token) < 32 || strings.TrimSpace(string(file)) != token {
		t.Fatalf("HTTPToken %q, %s holds %q; want the same token of at least 32 characters", token, space.HTTPTokenFile, file)
	}
	if info, err := os.Stat(filepath.Join(dir, space.HTTPTokenFile)); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v, %v; want mode 0600", space.HTTPTokenFile, info, err)
	}
	for _, path := range []string{"/connz?auth=1&subs=1", "/accountz", "/subsz?subs=1", "/accstatz", "/jsz?accounts=1&consumers=1"} {
		url := m.HTTPURL() + path
		for _, auth := range []string{"", "Bearer wrong", "Bearer " + token + "x", token} {
			t.Run(path+" is refused with Authorization "+strings.ReplaceAll(auth, token, "<token>"), func(t *testing.T) {
				code, body := getWith(t, url, auth)
				if code != http.StatusUnauthorized || strings.Contains(body, alice.ID) || strings.Contains(body, alice.JWT) {
					t.Fatalf("GET %s = %d %.300s; want 401 naming no identity", path, code, body)
				}
			})
		}
		t.Run(path+" answers the bearer of the token", func(t *testing.T) {
			if code, body := getWith(t, url, "Bearer "+token); code != http.StatusOK {
				t.Fatalf("GET %s with the token = %d %.300s", path, code, body)
			}
		})
	}
	t.Run("/connz?auth=1 shows alice's user key to the token's bearer only", func(t *testing.T) {
		if _, body := getWith(t, m.HTTPURL()+"/connz?auth=1", "Bearer "+token); !strings.Contains(body, alice.ID) {
			t.Fatalf("/connz?auth=1 with the token does not name alice (%s): %.500s", alice.ID, body)
		}
	})
	for _, path := range []string{"/healthz", "/metrics", "/varz", "/nats/healthz"} {
		t.Run(path+" answers without a token", func(t *testing.T) {
			if code, body := getWith(t, m.HTTPURL()+path, ""); code != http.StatusOK {
				t.Fatalf("GET %s = %d %.300s", path, code, body)
			}
		})
	}
}

// TestMonitoringListenerStaysOnLoopback checks that Start refuses a monitoring listener
// beyond loopback unless HTTPPublic says so.
func TestMonitoringListenerStaysOnLoopback(t *testing.T) {
	tests := []struct {
		name, http string
		public     bool
		refused    bool
	}{
		{"every interface is refused without HTTPPublic", ":0", false, true},
		{"0.0.0.0 is refused without HTTPPublic", "0.0.0.0:0", false, true},
		{"0.0.0.0 starts with HTTPPublic", "0.0.0.0:0", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := space.Options{Memory: true, HTTP: tt.http, HTTPPublic: tt.public}
			if !tt.refused {
				m := spacetest.New(t, func(o *space.Options) { *o = opts })
				if m.HTTPURL() == "" {
					t.Fatal("no monitoring listener")
				}
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			m, err := space.Start(ctx, opts)
			if err == nil {
				_ = m.Close(ctx)
				t.Fatal("Start succeeded; want the listener refused")
			}
			if !strings.Contains(err.Error(), "binds beyond this machine") {
				t.Fatalf("Start = %v; want the loopback rule", err)
			}
		})
	}
}
