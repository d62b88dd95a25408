package config

import (
	"errors"
	"strings"
	"testing"
)

// TestMonitoringStaysOnLoopback checks the http rule of docs/hostile-agents.md "A local user":
// the monitoring listener shows connections and accounts, so binding it beyond loopback needs
// http_public.
func TestMonitoringStaysOnLoopback(t *testing.T) {
	tests := []struct {
		name   string
		http   string
		public bool
		want   string // "" means valid
	}{
		{"monitoring off is valid", "", false, ""},
		{"a loopback IPv4 listener is valid", "127.0.0.1:8222", false, ""},
		{"a loopback IPv6 listener is valid", "[::1]:0", false, ""},
		{"localhost is valid", "localhost:8222", false, ""},
		{"every interface is refused without http_public", ":8222", false, "set http_public"},
		{"0.0.0.0 is refused without http_public", "0.0.0.0:8222", false, `http: "0.0.0.0:8222" binds beyond this machine`},
		{"a LAN address is refused without http_public", "192.168.1.5:8222", false, "set http_public"},
		{"0.0.0.0 is allowed with http_public", "0.0.0.0:8222", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := defaults(t.TempDir())
			c.HTTP, c.HTTPPublic = tt.http, tt.public
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
