package space_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cotal-go/cotal/space"
)

// TestOpenModeStaysOnLoopback starts open meshes on several listeners: beyond loopback only
// OpenInsecureBind starts one, and it says so at Warn in the structured log.
func TestOpenModeStaysOnLoopback(t *testing.T) {
	tests := []struct {
		name     string
		listen   string
		insecure bool
		refused  bool
	}{
		{"every interface is refused", "0.0.0.0:0", false, true},
		{"an empty host, which binds every interface, is refused", ":0", false, true},
		{"the IPv4 loopback starts", "127.0.0.1:0", false, false},
		{"localhost starts", "localhost:0", false, false},
		{"every interface starts with OpenInsecureBind", "0.0.0.0:0", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			m, err := space.Start(ctx, space.Options{Memory: true, Open: true, Listen: tt.listen,
				OpenInsecureBind: tt.insecure, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
			if tt.refused {
				if !errors.Is(err, space.ErrOpenBind) {
					t.Fatalf("Start = %v; want ErrOpenBind", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			defer m.Close(context.WithoutCancel(ctx))
			nc, err := nats.Connect(m.Broker().ClientURL())
			if err != nil {
				t.Fatalf("connect over TCP: %v", err)
			}
			nc.Close()
			if warned := warnedOpenBind(t, logs.Bytes()); warned != tt.insecure {
				t.Errorf("warning logged = %v, want %v; log:\n%s", warned, tt.insecure, logs.String())
			}
		})
	}
}

// warnedOpenBind reports whether the JSON log holds a Warn record naming the insecure option.
func warnedOpenBind(t *testing.T, log []byte) bool {
	t.Helper()
	for line := range bytes.Lines(log) {
		var rec map[string]any
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["level"] == "WARN" && rec["open_insecure_bind"] == true {
			return true
		}
	}
	return false
}
