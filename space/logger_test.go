package space_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/cotal-go/cotal/space"
)

func TestLogOptionsLogger(t *testing.T) {
	tests := []struct {
		name      string
		log       space.LogOptions
		lowest    slog.Level // the lowest level that passes
		jsonLines bool
	}{
		{"debug text lets debug records through", space.LogOptions{Format: "text", Level: "debug"}, slog.LevelDebug, false},
		{"info json drops debug and writes JSON lines", space.LogOptions{Format: "json", Level: "info"}, slog.LevelInfo, true},
		{"warn drops info", space.LogOptions{Format: "text", Level: "warn"}, slog.LevelWarn, false},
		{"error drops warn", space.LogOptions{Format: "json", Level: "error"}, slog.LevelError, true},
		{"a level Validate refuses logs at info", space.LogOptions{Format: "text", Level: "loud"}, slog.LevelInfo, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := tt.log.Logger(&buf)
			if !log.Enabled(context.Background(), tt.lowest) || log.Enabled(context.Background(), tt.lowest-1) {
				t.Fatalf("%+v: lowest enabled level is not %v", tt.log, tt.lowest)
			}
			log.Log(context.Background(), tt.lowest, "hello", "space", "main")
			line := strings.TrimSpace(buf.String())
			if got := json.Valid([]byte(line)); got != tt.jsonLines {
				t.Fatalf("%+v wrote %q; JSON = %v, want %v", tt.log, line, got, tt.jsonLines)
			}
			if !tt.jsonLines && !strings.Contains(line, "msg=hello space=main") {
				t.Fatalf("%+v wrote %q, want key=value text", tt.log, line)
			}
		})
	}
}
