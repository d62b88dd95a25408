package broker

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cotal-go/cotal/internal/testcert"
)

func TestTLSListener(t *testing.T) {
	tt := newTestTrust(t)
	cfg := operatorConfig(tt)
	cfg.Listen = "127.0.0.1:0"
	cfg.TLSCert, cfg.TLSKey = testcert.Write(t, "cotal test broker")
	b := startBroker(t, cfg)
	alice := tt.user(t, "alice")

	u := b.ClientURL()
	if !strings.HasPrefix(u, "tls://127.0.0.1:") {
		t.Fatalf("ClientURL = %q, want tls://127.0.0.1:<port>", u)
	}
	hostPort := strings.TrimPrefix(u, "tls://")

	t.Run("a TLS client that trusts the certificate connects", func(t *testing.T) {
		nc, err := nats.Connect(u, alice.option(), nats.RootCAs(cfg.TLSCert))
		if err != nil {
			t.Fatalf("TLS connect: %v", err)
		}
		defer nc.Close()
		roundTrip(t, nc)
	})
	t.Run("a plaintext client is refused", func(t *testing.T) {
		nc, err := nats.Connect("nats://"+hostPort, alice.option(), nats.NoReconnect())
		if err == nil {
			nc.Close()
			t.Fatal("plaintext connect succeeded on a TLS listener")
		}
	})
	t.Run("the server answers plaintext CONNECT with no PONG", func(t *testing.T) {
		if line := plaintextSession(t, hostPort); strings.Contains(line, "PONG") {
			t.Errorf("server answered a plaintext session: %q", line)
		}
	})
	t.Run("in-process connections need no TLS", func(t *testing.T) {
		roundTrip(t, connect(t, b, alice.option()))
	})
}

// plaintextSession speaks the protocol without TLS and returns whatever the server sends
// after INFO, which ends when the server closes the connection.
func plaintextSession(t *testing.T, hostPort string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", hostPort, 10*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(20 * time.Second)); err != nil {
		t.Fatalf("deadline: %v", err)
	}
	r := bufio.NewReader(conn)
	info, err := r.ReadString('\n')
	if err != nil || !strings.Contains(info, `"tls_required":true`) {
		t.Fatalf("INFO = %q (%v), want tls_required", info, err)
	}
	if _, err := conn.Write([]byte("CONNECT {\"verbose\":false}\r\nPING\r\n")); err != nil {
		return ""
	}
	var rest strings.Builder
	for {
		line, err := r.ReadString('\n')
		rest.WriteString(line)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("server neither answered nor closed a plaintext session")
			}
			return rest.String()
		}
	}
}

func TestTLSFilesThatDoNotLoadFailStart(t *testing.T) {
	cert, key := testcert.Write(t, "cotal test broker")
	otherCert, _ := testcert.Write(t, "cotal test broker")
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		cert, key string
	}{
		{"a missing certificate file", filepath.Join(t.TempDir(), "absent.pem"), key},
		{"a file that is not PEM", garbage, key},
		{"a key that does not match the certificate", otherCert, key},
		{"a certificate given as the key", cert, cert},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := operatorConfig(newTestTrust(t))
			cfg.Listen = "127.0.0.1:0"
			cfg.TLSCert, cfg.TLSKey = tc.cert, tc.key
			b, err := Start(context.Background(), cfg)
			if err == nil {
				shutdown(t, b)
				t.Fatal("Start succeeded with TLS files that do not load")
			}
			if !errors.Is(err, ErrTLS) {
				t.Errorf("Start error = %v, want ErrTLS", err)
			}
		})
	}
}
