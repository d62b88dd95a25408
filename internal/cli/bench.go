package cli

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cotal-go/cotal/bench"
)

func newBenchCmd() *cobra.Command {
	cfg := bench.DefaultConfig()
	var out string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "bench [workload...]",
		Short: "Measure cotal against raw NATS on one embedded server, side by side",
		Long: `bench runs the benchmark suite, or the named workloads, in the style of nats bench: each
workload is measured for cotal and for raw nats.go doing the same work on the same embedded
server in the same run, and the table shows medians over --runs runs with the spread and the
ratio cotal/raw beside each row's target. A second raw column, raw + encoding/json, has the
raw receivers decode cotal's envelope with the standard library: what hand-rolled NATS carrying
the same messages pays; a target marked "of raw+json" is judged against it. Progress goes to
stderr, the table to stdout (--json: one JSON object per row, with workload, case, metric,
unit, cotal, raw, raw_json, ratio, ratio_json, target and met), and --out writes the markdown report (BENCHMARKS.md) with date, commit, machine and command.

Workloads:
` + workloadList(),
		ValidArgs: bench.Names(),
		Args:      cobra.OnlyValidArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBench(cmd, args, cfg, out, asJSON)
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Runs, "runs", cfg.Runs, "runs of each side per case; figures are medians")
	f.IntSliceVar(&cfg.Payloads, "payloads", cfg.Payloads, "text payload sizes in bytes")
	f.IntVar(&cfg.Messages, "messages", cfg.Messages, "messages per multicast, DM and anycast throughput run")
	f.IntVar(&cfg.DurableMessages, "durable-messages", cfg.DurableMessages, "messages per durable-channel and sync-mode run")
	f.IntVar(&cfg.LatencyRounds, "latency-rounds", cfg.LatencyRounds, "messages per latency run, one in flight")
	f.IntVar(&cfg.Backfill, "backfill", cfg.Backfill, "retained messages a join replays")
	f.IntVar(&cfg.Burst, "burst", cfg.Burst, "DMs of the path workload's sustained case")
	f.IntSliceVar(&cfg.Endpoints, "endpoints", cfg.Endpoints, "fleet sizes for presence and memory")
	f.StringVar(&out, "out", "", "also write the markdown report to this file, e.g. BENCHMARKS.md")
	f.BoolVar(&asJSON, "json", false, "print one JSON object per row instead of the table")
	return cmd
}

func runBench(cmd *cobra.Command, args []string, cfg bench.Config, out string, asJSON bool) error {
	format, _ := cmd.Flags().GetString("log-format")
	level, _ := cmd.Flags().GetString("log-level")
	cfg.Logger = newLogger(format, level, cmd.ErrOrStderr())
	cfg.Remote = startRemoteMesh
	start := time.Now()
	rows, err := bench.Run(cmd.Context(), cfg, args...)
	if err != nil {
		return err
	}
	write := bench.WriteText
	if asJSON {
		write = bench.WriteJSON
	}
	if err := write(cmd.OutOrStdout(), rows); err != nil {
		return err
	}
	if out == "" {
		return nil
	}
	var buf bytes.Buffer
	meta := bench.Meta{Date: start, Commit: gitCommit(cmd.Context()), Machine: machine(),
		Command: commandLine(cmd, args), Duration: time.Since(start), Config: cfg}
	if err := bench.WriteMarkdown(&buf, meta, rows); err != nil {
		return err
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	return nil
}

// workloadList is one line per workload for the help text: name, title, what it measures.
func workloadList() string {
	var b strings.Builder
	for _, w := range bench.Workloads() {
		fmt.Fprintf(&b, "  %-10s %s: %s\n", w.Name, w.Title, w.Summary)
	}
	return strings.TrimRight(b.String(), "\n")
}

// gitCommit is the checked-out revision, marked when the work tree has changes, or "unknown"
// outside a git work tree.
func gitCommit(ctx context.Context) string {
	rev, err := exec.CommandContext(ctx, "git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	commit := strings.TrimSpace(string(rev))
	if st, err := exec.CommandContext(ctx, "git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		commit += " (with uncommitted changes)"
	}
	return commit
}

// machine describes where the suite ran: cores, CPU model when known, platform, versions.
func machine() string {
	cpu := ""
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		for s := bufio.NewScanner(f); s.Scan(); {
			if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = " (" + strings.TrimSpace(v) + ")"
				break
			}
		}
	}
	return fmt.Sprintf("%d cores%s, %s/%s, Go %s, nats-server %s", runtime.NumCPU(), cpu,
		runtime.GOOS, runtime.GOARCH, strings.TrimPrefix(runtime.Version(), "go"), server.VERSION)
}

// commandLine rebuilds the command as given: its path, the flags set, the workloads named.
func commandLine(cmd *cobra.Command, args []string) string {
	parts := []string{cmd.CommandPath()}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		v := f.Value.String()
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			v = strings.Join(sv.GetSlice(), ",")
		}
		parts = append(parts, "--"+f.Name+"="+v)
	})
	return strings.Join(append(parts, args...), " ")
}
