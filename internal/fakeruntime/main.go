// Command fakeruntime is an agent runtime for tests: it does what Claude Code or another MCP
// client does with the configuration `cotal spawn` and `cotal start` write, without a model.
// It reads the MCP server entry named cotal from $COTAL_MCP_CONFIG, runs it over stdio,
// initializes, and then runs its steps in order, appending one JSON line per step to the -out
// file. With -dir instead, the steps are the lines of DIR/$COTAL_NAME.steps and the results go
// to DIR/$COTAL_NAME.jsonl: a teammate the manager service spawns runs its spawner's command,
// so one command line serves a whole team. The steps:
//
//	tools                  the tools the server lists
//	call:TOOL:JSON         call TOOL with the JSON object of arguments
//	await:TEXT             read cotal_inbox until a message holds TEXT (at most -wait)
//	hold                   stay until SIGTERM or SIGINT, as a session does
//
// It exits 0 after its steps, 1 when one could not run (a tool's error result is recorded,
// not a failure), 2 when it cannot start.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// result is one line of the -out file.
type result struct {
	Step  string   `json:"step"`
	Tools []string `json:"tools,omitempty"`
	Text  string   `json:"text,omitempty"`
	// ToolError is set when the tool answered with an error result.
	ToolError bool   `json:"toolError,omitempty"`
	Err       string `json:"err,omitempty"`
}

type mcpConfig struct {
	MCPServers map[string]struct {
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
	} `json:"mcpServers"`
}

func main() {
	out := flag.String("out", "", "file to append one JSON line per step to")
	dir := flag.String("dir", "", "directory of NAME.steps and NAME.jsonl, NAME being $COTAL_NAME")
	wait := flag.Duration("wait", time.Minute, "how long await waits")
	flag.Parse()
	steps := flag.Args()
	if *dir != "" {
		name := os.Getenv("COTAL_NAME")
		data, err := os.ReadFile(filepath.Join(*dir, name+".steps"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "fakeruntime:", err)
			os.Exit(2)
		}
		*out, steps = filepath.Join(*dir, name+".jsonl"), nil
		for _, line := range strings.Split(string(data), "\n") {
			if line = strings.TrimSpace(line); line != "" {
				steps = append(steps, line)
			}
		}
	}
	if *out == "" {
		fmt.Fprintln(os.Stderr, "fakeruntime: give -out or -dir")
		os.Exit(2)
	}
	os.Exit(run(*out, *wait, steps))
}

func run(out string, wait time.Duration, steps []string) int {
	f, err := os.OpenFile(out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeruntime:", err)
		return 2
	}
	defer f.Close()
	record := func(r result) { data, _ := json.Marshal(r); _, _ = f.Write(append(data, '\n')) }
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	cs, err := connect(ctx)
	if err != nil {
		record(result{Step: "connect", Err: err.Error()})
		return 2
	}
	defer cs.Close()
	fmt.Println("fakeruntime: connected")
	code := 0
	for _, step := range steps {
		r := result{Step: step}
		if err := do(ctx, cs, step, wait, &r); err != nil {
			r.Err = err.Error()
			code = 1
		}
		record(r)
		fmt.Println("fakeruntime: step", step, "done")
	}
	return code
}

// connect runs the cotal entry of $COTAL_MCP_CONFIG and initializes a session with it.
func connect(ctx context.Context) (*mcp.ClientSession, error) {
	data, err := os.ReadFile(os.Getenv("COTAL_MCP_CONFIG"))
	if err != nil {
		return nil, fmt.Errorf("read the MCP configuration: %w", err)
	}
	var cfg mcpConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("parse the MCP configuration: %w", err)
	}
	e, ok := cfg.MCPServers["cotal"]
	if !ok {
		return nil, errors.New("the MCP configuration has no cotal server")
	}
	cmd := exec.Command(e.Command, e.Args...)
	cmd.Env = os.Environ()
	for k, v := range e.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "fakeruntime", Version: "1"}, nil)
	return client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
}

// do runs one step, filling r.
func do(ctx context.Context, cs *mcp.ClientSession, step string, wait time.Duration, r *result) error {
	kind, rest, _ := strings.Cut(step, ":")
	switch kind {
	case "tools":
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			return err
		}
		for _, t := range tools.Tools {
			r.Tools = append(r.Tools, t.Name)
		}
		return nil
	case "call":
		tool, args, _ := strings.Cut(rest, ":")
		var in map[string]any
		if args != "" {
			if err := json.Unmarshal([]byte(args), &in); err != nil {
				return fmt.Errorf("arguments of %s: %w", tool, err)
			}
		}
		text, isErr, err := call(ctx, cs, tool, in)
		r.Text, r.ToolError = text, isErr
		return err
	case "await":
		return await(ctx, cs, rest, wait, r)
	case "hold":
		<-ctx.Done()
		return nil
	}
	return fmt.Errorf("unknown step %q", step)
}

// call calls tool and returns its text content and whether it is an error result.
func call(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", false, err
	}
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String(), res.IsError, nil
}

// await reads the inbox until a message holds text.
func await(ctx context.Context, cs *mcp.ClientSession, text string, wait time.Duration, r *result) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var seen strings.Builder
	for ctx.Err() == nil {
		got, isErr, err := call(ctx, cs, "cotal_inbox", map[string]any{"wait_seconds": 2})
		if err != nil {
			return err
		}
		if isErr {
			return fmt.Errorf("cotal_inbox: %s", got)
		}
		seen.WriteString(got)
		if strings.Contains(got, text) {
			r.Text = seen.String()
			return nil
		}
	}
	r.Text = seen.String()
	return fmt.Errorf("no message holding %q within %v", text, wait)
}
