package wire

import (
	"bytes"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
)

func TestParseLink(t *testing.T) {
	tests := []struct {
		name, link string
		want       Link
		server     string
	}{
		{"a bare link takes the default port", "cotal://mesh.example.com/main",
			Link{Host: "mesh.example.com", Port: 4222, Space: "main"}, "nats://mesh.example.com:4222"},
		{"cotals requires TLS", "cotals://mesh.example.com:7422/main",
			Link{TLS: true, Host: "mesh.example.com", Port: 7422, Space: "main"}, "tls://mesh.example.com:7422"},
		{"a bare userinfo is a token", "cotal://s3cr3t@localhost/main",
			Link{Host: "localhost", Port: 4222, Space: "main", Token: "s3cr3t"}, "nats://localhost:4222"},
		{"user:pass is a username and password", "cotal://alice:pw@127.0.0.1:4333/main",
			Link{Host: "127.0.0.1", Port: 4333, Space: "main", User: "alice", Password: "pw"}, "nats://127.0.0.1:4333"},
		{"escaped credentials are decoded", "cotal://a%40b:p%3Aw@h/main",
			Link{Host: "h", Port: 4222, Space: "main", User: "a@b", Password: "p:w"}, "nats://h:4222"},
		{"an IPv6 host sits in brackets", "cotal://[::1]:4223/main",
			Link{Host: "::1", Port: 4223, Space: "main"}, "nats://[::1]:4223"},
		{"channel and channels merge in order without duplicates",
			"cotal://h/main?channel=team.backend,general&channels=general,ops.>",
			Link{Host: "h", Port: 4222, Space: "main", Channels: []string{"team.backend", "general", "ops.>"}},
			"nats://h:4222"},
		{"an escaped channel list decodes", "cotal://h/main?channels=a%2Cb%2Eteam.%3E",
			Link{Host: "h", Port: 4222, Space: "main", Channels: []string{"a", "b.team.>"}}, "nats://h:4222"},
		{"an escaped space decodes", "cotal://h/my%20space",
			Link{Host: "h", Port: 4222, Space: "my space"}, "nats://h:4222"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLink(tt.link)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParseLink = %+v, want %+v", got, tt.want)
			}
			if got.ServerURL() != tt.server {
				t.Fatalf("ServerURL = %q, want %q", got.ServerURL(), tt.server)
			}
			if strings.Contains(got.ServerURL(), "@") {
				t.Fatalf("ServerURL %q carries credentials", got.ServerURL())
			}
			back, err := ParseLink(got.String())
			if err != nil || !reflect.DeepEqual(back, got) {
				t.Fatalf("ParseLink(%q) = %+v, %v; want the link back", got.String(), back, err)
			}
		})
	}
}

func TestLinkStringIsCanonical(t *testing.T) {
	tests := []struct{ in, want string }{
		{"cotal://h:4222/main", "cotal://h/main"},
		{"cotals://tok@h:1/main?channels=a&channel=b.*,c.>", "cotals://tok@h:1/main?channel=a,b.*,c.>"},
		{"cotal://[::1]/main", "cotal://[::1]/main"},
		{"cotal://u:p@h/main", "cotal://u:p@h/main"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			l, err := ParseLink(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := l.String(); got != tt.want {
				t.Fatalf("String = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseLinkNamesTheProblem(t *testing.T) {
	tests := []struct{ name, link, mentions string }{
		{"a nats URL", "nats://h:4222/main", "scheme"},
		{"no scheme", "h/main", "scheme"},
		{"a bare host and port says what a link looks like", "127.0.0.1:4222", "no scheme; a join link is cotal://host:port/space"},
		{"a host, port and space without the scheme", "127.0.0.1:4222/main", "cotal://host:port/space"},
		{"a host name and port without the scheme", "localhost:4222", "no scheme"},
		{"an opaque link", "cotal:main", "scheme://host/space"},
		{"a fragment", "cotal://h/main#x", "fragment"},
		{"no host", "cotal:///main", "host"},
		{"a host with a bad character", "cotal://h!x/main", "host"},
		{"an IPv6 zone", "cotal://[fe80::1%25eth0]/main", "host"},
		{"a port out of range", "cotal://h:70000/main", "port"},
		{"port zero", "cotal://h:0/main", "port"},
		{"an empty port", "cotal://h:/main", "port"},
		{"no space", "cotal://h", "path"},
		{"a bare slash", "cotal://h/", "path"},
		{"two path segments", "cotal://h/main/x", "path"},
		{"an empty token", "cotal://@h/main", "token"},
		{"a user without password", "cotal://alice:@h/main", "user:pass"},
		{"a password without user", "cotal://:pw@h/main", "user:pass"},
		{"an unknown parameter", "cotal://h/main?chanel=a", `"chanel"`},
		{"an empty channel in the list", "cotal://h/main?channel=a,,b", "empty"},
		{"a parameter without value", "cotal://h/main?channel", "channel=a,b"},
		{"a misplaced wildcard", "cotal://h/main?channel=team.>.x", "last segment"},
		{"a bad escape", "cotal://h/main?channel=%zz", "channel"},
		{"a non-numeric port, without echoing the password", "cotal://alice:s3cr3t@h:abc/main", "port"},
		{"a bad host, without echoing the token", "cotal://s3cr3t@h x/main", "host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := ParseLink(tt.link)
			if !errors.Is(err, ErrInvalidLink) {
				t.Fatalf("ParseLink(%q) = %+v, %v; want ErrInvalidLink", tt.link, l, err)
			}
			if !strings.Contains(err.Error(), tt.mentions) || strings.Contains(err.Error(), "s3cr3t") {
				t.Fatalf("error %q does not mention %q or shows a credential", err, tt.mentions)
			}
		})
	}
}

func TestLinkLoggingHidesCredentials(t *testing.T) {
	for _, raw := range []string{"cotal://s3cr3t@h/main", "cotal://alice:s3cr3t@h/main"} {
		t.Run(raw, func(t *testing.T) {
			l, err := ParseLink(raw)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			slog.New(slog.NewTextHandler(&buf, nil)).Info("joining", "link", l)
			for _, s := range []string{l.Redacted(), buf.String()} {
				if strings.Contains(s, "s3cr3t") || !strings.Contains(s, "xxxxx") {
					t.Fatalf("%q shows or drops the credential slot", s)
				}
			}
		})
	}
}
