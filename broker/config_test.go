package broker

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

func TestValidate(t *testing.T) {
	tt := newTestTrust(t)
	foreign := newTestTrust(t)
	sysWithJetStream := jwt.NewAccountClaims(tt.sysPub)
	sysWithJetStream.Limits.JetStreamLimits = jwt.JetStreamLimits{DiskStorage: -1}

	tests := []struct {
		name string
		edit func(*Config)
		want string // a fragment of the error naming the field; "" means valid
	}{
		{"an operator memory mesh is valid", func(*Config) {}, ""},
		{"an open mesh on a store directory is valid", func(c *Config) {
			*c = DefaultConfig()
			c.Open, c.StoreDir = true, "/var/lib/cotal"
		}, ""},
		{"the system account may come from the operator JWT", func(c *Config) { c.SystemAccount = "" }, ""},
		{"a listener with TLS and monitoring is valid", func(c *Config) {
			c.Listen, c.HTTP, c.TLSCert, c.TLSKey = "0.0.0.0:4222", "127.0.0.1:8222", "c.pem", "k.pem"
		}, ""},
		{"interval sync with a period is valid", func(c *Config) { c.Sync, c.SyncInterval = SyncInterval, time.Second }, ""},
		{"no store and no memory is refused", func(c *Config) { c.Memory = false }, "StoreDir is empty"},
		{"a store and memory together are refused", func(c *Config) { c.StoreDir = "/tmp/x" }, "both StoreDir and Memory"},
		{"a server name with a space is refused", func(c *Config) { c.ServerName = "my mesh" }, "ServerName"},
		{"a zero ready timeout is refused", func(c *Config) { c.ReadyTimeout = 0 }, "ReadyTimeout"},
		{"a listen address without a port is refused", func(c *Config) { c.Listen = "localhost" }, "Listen"},
		{"a listen port out of range is refused", func(c *Config) { c.Listen = "127.0.0.1:70000" }, "Listen"},
		{"a bad monitoring address is refused", func(c *Config) { c.HTTP = "127.0.0.1:http" }, "HTTP"},
		{"a certificate without a key is refused", func(c *Config) { c.Listen, c.TLSCert = ":4222", "c.pem" }, "TLSCert and TLSKey"},
		{"TLS without a listener is refused", func(c *Config) { c.TLSCert, c.TLSKey = "c.pem", "k.pem" }, "Listen is empty"},
		{"an unknown sync mode is refused", func(c *Config) { c.Sync = "sometimes" }, "Sync"},
		{"interval sync without a period is refused", func(c *Config) { c.Sync, c.SyncInterval = SyncInterval, 0 }, "SyncInterval"},
		{"open mode with an operator is refused", func(c *Config) { c.Open = true }, "Open"},
		{"a per-user connection cap without a system user is refused", func(c *Config) { c.ConnectionsPerUser = 5 }, "SystemUserJWT is empty"},
		{"a negative per-user connection cap is refused", func(c *Config) { c.ConnectionsPerUser = -1 }, "ConnectionsPerUser"},
		{"no auth mode at all is refused", func(c *Config) { c.OperatorJWT, c.SystemAccount, c.Accounts = "", "", nil }, "OperatorJWT is empty"},
		{"an operator JWT that is an account JWT is refused", func(c *Config) { c.OperatorJWT = tt.appJWT }, "OperatorJWT"},
		{"a system account other than the operator's is refused", func(c *Config) { c.SystemAccount = tt.appPub }, "SystemAccount"},
		{"a missing system account JWT is refused", func(c *Config) { delete(c.Accounts, tt.sysPub) }, "system account"},
		{"an account keyed by the wrong public key is refused", func(c *Config) {
			c.Accounts[tt.appPub] = foreign.appJWT
		}, "Accounts[" + tt.appPub},
		{"an account from another operator is refused", func(c *Config) {
			c.Accounts[foreign.appPub] = foreign.appJWT
		}, "Accounts[" + foreign.appPub},
		{"a leaf hub and a leaf remote are valid", func(c *Config) {
			c.Leaf = &Leaf{Listen: "127.0.0.1:7422", Domain: "leaf",
				Remotes: []LeafRemote{{URL: "nats-leaf://hub:7422", LocalAccount: tt.appPub, Credentials: "leaf.creds"}}}
		}, ""},
		{"a leaf listener without a port is refused", func(c *Config) { c.Leaf = &Leaf{Listen: "7422"} }, "Leaf.Listen"},
		{"a leaf remote of another scheme is refused", func(c *Config) {
			c.Leaf = &Leaf{Remotes: []LeafRemote{{URL: "http://hub:7422", LocalAccount: tt.appPub, Credentials: "leaf.creds"}}}
		}, "Leaf.Remotes[0].URL"},
		{"a leaf remote bound to an unknown account is refused", func(c *Config) {
			c.Leaf = &Leaf{Remotes: []LeafRemote{{URL: "nats-leaf://hub:7422", LocalAccount: foreign.appPub, Credentials: "leaf.creds"}}}
		}, "LocalAccount"},
		{"a leaf remote without credentials is refused", func(c *Config) {
			c.Leaf = &Leaf{Remotes: []LeafRemote{{URL: "nats-leaf://hub:7422", LocalAccount: tt.appPub}}}
		}, "Credentials is empty"},
		{"a system account with JetStream is refused", func(c *Config) {
			c.Accounts[tt.sysPub] = encode(t, sysWithJetStream, tt.operator)
		}, "JetStream"},
		{"an account signed by a stray key is refused", func(c *Config) {
			c.Accounts[tt.appPub] = encode(t, tt.appClaims, newKey(t, nkeys.CreateOperator))
		}, "signed by"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := operatorConfig(tt)
			cfg.Accounts = tt.accounts()
			tc.edit(&cfg)
			err := cfg.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Validate = %v, want ErrInvalidConfig", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %q, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestStartRefusesAnInvalidConfig(t *testing.T) {
	if b, err := Start(t.Context(), DefaultConfig()); !errors.Is(err, ErrInvalidConfig) {
		if b != nil {
			shutdown(t, b)
		}
		t.Fatalf("Start with an empty config: err = %v, want ErrInvalidConfig", err)
	}
}
