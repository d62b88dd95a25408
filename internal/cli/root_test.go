package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/spf13/cobra"
)

func TestRun(t *testing.T) {
	tests := []struct {
		name        string
		args        []string
		code        int
		stdout      []string // substrings
		stderr      []string // substrings
		quietStdout bool     // stdout must stay empty
	}{
		{name: "version prints the cotal, Go and nats-server versions", args: []string{"version"}, code: exitOK,
			stdout: []string{"cotal " + cotalVersion() + "\n", "Go " + strings.TrimPrefix(runtime.Version(), "go") + "\n", "nats-server " + server.VERSION + "\n"}},
		{name: "no command prints the help", code: exitOK, stdout: []string{"Usage:", "version"}},
		{name: "help lists the log flags", args: []string{"--help"}, code: exitOK, stdout: []string{"--log-format", "--log-level"}},
		{name: "completion is built in", args: []string{"completion", "bash"}, code: exitOK, stdout: []string{"bash completion"}},
		{name: "an unknown command is a usage error with a suggestion", args: []string{"verison"}, code: exitUsage,
			stderr:      []string{`cotal: unknown command "verison" for "cotal"`, "Did you mean this?", "version", "Run 'cotal --help' for usage."},
			quietStdout: true},
		{name: "an unknown flag is a usage error", args: []string{"--nope"}, code: exitUsage,
			stderr: []string{"cotal: unknown flag: --nope"}, quietStdout: true},
		{name: "an argument to version is a usage error", args: []string{"version", "extra"}, code: exitUsage,
			stderr: []string{"Run 'cotal version --help' for usage."}, quietStdout: true},
		{name: "an unknown log format is a usage error", args: []string{"--log-format", "xml", "version"}, code: exitUsage,
			stderr: []string{`cotal: --log-format "xml": use text or json`}, quietStdout: true},
		{name: "a link without its scheme says what a join link looks like", args: []string{"who", "--link", "127.0.0.1:4222", "--creds", "x.creds"},
			code: exitUsage, stderr: []string{"--link: invalid join link: no scheme; a join link is cotal://host:port/space"}, quietStdout: true},
		{name: "an unknown log level is a usage error", args: []string{"version", "--log-level", "loud"}, code: exitUsage,
			stderr: []string{`cotal: --log-level "loud"`}, quietStdout: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout := checkRun(t, tt.args, tt.code, tt.stdout, tt.stderr)
			if tt.quietStdout && stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
		})
	}
}

// checkRun runs the command line args and checks its exit code and that stdout and stderr
// contain the wanted substrings; it returns stdout.
func checkRun(t *testing.T, args []string, code int, stdout, stderr []string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if got := Run(args, &out, &errOut); got != code {
		t.Fatalf("run(%q) = %d, want %d\nstdout: %s\nstderr: %s", args, got, code, &out, &errOut)
	}
	for _, want := range stdout {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout %q does not contain %q", &out, want)
		}
	}
	for _, want := range stderr {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr %q does not contain %q", &errOut, want)
		}
	}
	return out.String()
}

func TestVersionFromLdflags(t *testing.T) {
	old := version
	version = "v1.2.3"
	t.Cleanup(func() { version = old })

	var stdout, stderr bytes.Buffer
	if code := Run([]string{"version"}, &stdout, &stderr); code != exitOK || !strings.HasPrefix(stdout.String(), "cotal v1.2.3\n") {
		t.Fatalf("run = %d, stdout %q; want 0 and cotal v1.2.3", code, &stdout)
	}
}

func TestFailingCommandExitsOne(t *testing.T) {
	var stdout, stderr bytes.Buffer
	root := newRootCmd(&stdout, &stderr)
	root.AddCommand(&cobra.Command{
		Use:  "fail",
		RunE: func(*cobra.Command, []string) error { return errors.New("the store is locked") },
	})
	if code := execute(context.Background(), root, []string{"fail"}, &stderr); code != exitError {
		t.Fatalf("execute = %d, want %d", code, exitError)
	}
	if got := stderr.String(); got != "cotal: the store is locked\n" {
		t.Fatalf("stderr = %q, want only the prefixed error", got)
	}
}

func TestNewLogger(t *testing.T) {
	tests := []struct {
		name, format, level string
		logDebug, logInfo   bool // which records pass the level
	}{
		{"debug lets debug records through", "text", "debug", true, true},
		{"info drops debug records", "text", "info", false, true},
		{"warn drops info records", "json", "warn", false, false},
		{"an unknown level logs at info", "text", "loud", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := newLogger(tt.format, tt.level, &buf)
			log.Debug("d")
			log.Info("i")
			if got := strings.Contains(buf.String(), "msg=d") || strings.Contains(buf.String(), `"msg":"d"`); got != tt.logDebug {
				t.Errorf("debug record logged = %v, want %v: %q", got, tt.logDebug, &buf)
			}
			if got := strings.Contains(buf.String(), "msg=i") || strings.Contains(buf.String(), `"msg":"i"`); got != tt.logInfo {
				t.Errorf("info record logged = %v, want %v: %q", got, tt.logInfo, &buf)
			}
		})
	}
}

func TestNewLoggerFormats(t *testing.T) {
	var text, js bytes.Buffer
	newLogger("text", "info", &text).Info("hello", "space", "main")
	newLogger("json", "info", &js).Info("hello", "space", "main")

	if !strings.Contains(text.String(), "msg=hello space=main") {
		t.Errorf("text logger wrote %q, want key=value text", &text)
	}
	var record map[string]any
	if err := json.Unmarshal(js.Bytes(), &record); err != nil || record["msg"] != "hello" || record["space"] != "main" {
		t.Errorf("json logger wrote %q (%v), want one JSON object", &js, err)
	}
}
