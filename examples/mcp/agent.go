package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// agent is one `cotal mcp` process and the MCP client session that drives it, as an agent
// runtime holds it.
type agent struct {
	name   string
	cs     *mcp.ClientSession
	stderr *logBuffer
}

// logBuffer collects a process's standard error while it runs.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startAgent starts `cotal mcp` as the agent of creds. Its standard output carries MCP only;
// its logs, on standard error, are kept for when something fails.
func startAgent(ctx context.Context, name, cotal, link, creds string) (*agent, error) {
	a := &agent{name: name, stderr: &logBuffer{}}
	cmd := exec.Command(cotal, "mcp", "--link", link, "--creds", creds, "--log-level", "warn")
	cmd.Stderr = a.stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "example-" + name, Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, fmt.Errorf("start cotal mcp for %s: %w", name, err)
	}
	a.cs = cs
	return a, nil
}

// call calls a tool and decodes its structured result into out, if not nil. An error result
// (isError) is returned as an error carrying the tool's own sentence.
func (a *agent) call(ctx context.Context, tool string, args map[string]any, out any) error {
	res, err := a.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return fmt.Errorf("%s: %s: %w", a.name, tool, err)
	}
	if res.IsError {
		var text []string
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				text = append(text, t.Text)
			}
		}
		return fmt.Errorf("%s: %s: %s", a.name, tool, strings.Join(text, " "))
	}
	if out == nil {
		return nil
	}
	data, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}

// message is the part of a cotal_inbox message the example prints.
type message struct {
	Kind    string `json:"kind"`
	Channel string `json:"channel"`
	From    string `json:"from"`
	Text    string `json:"text"`
}

// next waits in cotal_inbox for the next message and returns it.
func (a *agent) next(ctx context.Context) (message, error) {
	for ctx.Err() == nil {
		var in struct {
			Messages []message `json:"messages"`
		}
		if err := a.call(ctx, "cotal_inbox", map[string]any{"wait_seconds": 10}, &in); err != nil {
			return message{}, err
		}
		if len(in.Messages) > 0 {
			return in.Messages[0], nil
		}
	}
	return message{}, fmt.Errorf("%s: no message before the deadline: %w; its log:\n%s", a.name, ctx.Err(), a.stderr)
}

// close ends the session by closing the server's standard input, which ends `cotal mcp`.
func (a *agent) close() { _ = a.cs.Close() }
