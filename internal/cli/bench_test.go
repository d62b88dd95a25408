package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBenchCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr []string
		file   []string // substrings of the --out file
	}{
		{name: "an unknown workload is a usage error", args: []string{"bench", "nosuch"}, code: exitUsage,
			stderr: []string{`invalid argument "nosuch"`}},
		{name: "zero runs is refused before anything starts", args: []string{"bench", "--runs", "0"}, code: exitError,
			stderr: []string{"invalid bench config", "Runs"}},
		{name: "one workload prints its rows and writes the report", code: exitOK,
			args:   []string{"bench", "space", "--runs", "1", "--log-level", "warn", "--out", out},
			stdout: []string{"7. Per-test space", "COTAL/RAW"},
			file: []string{"# cotal benchmarks", "| command | `cotal bench --log-level=warn --out=" + out + " --runs=1 space` |",
				"| machine | ", "| 7. Per-test space | authenticated, memory | start, connect 2, close (ms) |"}},
		{name: "--json prints one object per row with its target", code: exitOK,
			args: []string{"bench", "space", "--runs", "1", "--log-level", "warn", "--json"},
			stdout: []string{`{"workload":"7. Per-test space","case":"authenticated, memory","metric":"start, connect 2, close",`,
				`"unit":"ms","cotal":`, `"raw_json":null,"ratio":`, `"target":"≤ 3×","met":`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkRun(t, tt.args, tt.code, tt.stdout, tt.stderr)
			if len(tt.file) == 0 {
				return
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tt.file {
				if !strings.Contains(string(data), want) {
					t.Errorf("report does not contain %q:\n%s", want, data)
				}
			}
		})
	}
}
