package cli

import (
	"bytes"
	"context"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"
)

// accountKey is an account public key, which `cotal up`'s log should not show.
var accountKey = regexp.MustCompile(`\bA[A-Z2-7]{55}\b`)

const (
	logUser    = "UAS5UD7RBH2N7FYK6IG7QFHMP3JWZDX64IFS6MCPD6MLHFHIUXPSL65Y"
	logAccount = "ABFI7UE3XHURBVWSALA6DF7NMMNETHEGWHMNNETOAFBHG4Y7VL4GATAC"
)

func TestMeshLogSpeaksOfAgentsByName(t *testing.T) {
	violation := `127.0.0.1:46164 - cid:64 - "v1.55.0:go" - "` + logAccount + `/main/jwt:` + logUser + `" - Publish Violation - Subject "cotal.main.chat.random"`
	tests := []struct {
		name  string
		level slog.Level
		msg   string
		attrs []any
		want  []string // substrings of the one line written; nil: nothing at info
		not   []string
	}{
		{name: "a refusal names the agent and the subject, without the account key", level: slog.LevelError, msg: violation,
			want: []string{"level=WARN", `msg="refused a publish outside its grants" space=main name=alice`, "id=" + logUser,
				"subject=cotal.main.chat.random", "from=127.0.0.1:46164"},
			not: []string{"Violation", logAccount}},
		{name: "the broker's summary of held-back refusals names the agent too", level: slog.LevelError,
			msg: "client refusals held back: Subscription Violation", attrs: []any{"identity", "main/jwt:" + logUser, "count", 41,
				"within", 10 * time.Second, "last", strings.Replace(violation, "Publish", "Subscription", 1)},
			want: []string{`msg="refused more subscriptions outside its grants" space=main name=alice`, "count=41", "within=10s"},
			not:  []string{logAccount}},
		{name: "a record with an instance id gets its name", level: slog.LevelWarn, msg: "recreated a missing consumer",
			attrs: []any{"owner", logUser}, want: []string{"owner=" + logUser, "name=alice"}},
		{name: "an unknown id is named unknown", level: slog.LevelInfo, msg: "joined a durable channel",
			attrs: []any{"member", "U" + strings.Repeat("B", 55)}, want: []string{"name=unknown"}},
		{name: "an info line about a command's own identity is debug", level: slog.LevelInfo, msg: "minted a credential",
			attrs: []any{"name", "cli-send-root-abc123", "id", "U" + strings.Repeat("C", 55)}},
		{name: "nats-server's per-stream restore lines are debug", level: slog.LevelInfo,
			msg: "  Restored 3 messages for stream '" + logAccount + " > CHAT_main' in 1ms"},
		{name: "other lines pass unchanged", level: slog.LevelInfo, msg: "Server is ready", want: []string{`msg="Server is ready"`}},
	}
	var buf bytes.Buffer
	h := newMeshLog(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	log := slog.New(h)
	log.Info("minted a credential", "name", "alice", "id", logUser)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf.Reset()
			log.Log(context.Background(), tt.level, tt.msg, tt.attrs...)
			out := buf.String()
			if tt.want == nil && out != "" {
				t.Fatalf("wrote %q, want nothing at info", out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("%q lacks %q", out, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(out, n) {
					t.Errorf("%q contains %q", out, n)
				}
			}
		})
	}
}

func TestRecoveryEndsWithOneLine(t *testing.T) {
	var buf bytes.Buffer
	h := newMeshLog(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	log := slog.New(h)
	for _, s := range []string{"CHAT_main", "DM_main"} {
		log.Info("  Starting restore for stream '" + logAccount + " > " + s + "'")
		log.Info("  Restored 4 messages for stream '" + logAccount + " > " + s + "' in 1ms")
		log.Info("  Recovering 2 consumers for stream - '" + logAccount + " > " + s + "'")
	}
	log.Warn("a recovery warning")
	h.rec.recovered(log)
	h.rec.recovered(log)
	out := buf.String()
	if n := strings.Count(out, "recovered the stored state"); n != 1 || strings.Contains(out, "Restored") ||
		!strings.Contains(out, "streams=2 messages=8 consumers=4 warnings=1") || accountKey.MatchString(out) {
		t.Fatalf("log after a restore:\n%s", out)
	}
	buf.Reset()
	fresh := newMeshLog(slog.NewTextHandler(&buf, nil))
	fresh.rec.recovered(slog.New(fresh))
	if buf.Len() != 0 {
		t.Fatalf("a fresh store logged %q; nothing was recovered", buf.String())
	}
}
