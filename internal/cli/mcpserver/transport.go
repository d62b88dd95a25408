package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// parseError is JSON-RPC 2.0's answer to a message that is not JSON: code -32700 with a null
// id, since the id of a line that does not parse cannot be known.
var parseError = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: ` +
	`the line is not JSON; send one JSON-RPC message per line"}}` + "\n")

// LineTransport is the MCP transport of `cotal mcp`: newline-delimited JSON-RPC over r and w,
// like the SDK's stdio transport, except that a line that is not JSON is answered with a
// JSON-RPC parse error (-32700) and skipped. The SDK's own decoder cannot resynchronise after
// such a line and ends the session, which would end the server for one stray line a runtime
// or a person typed.
type LineTransport struct {
	r io.Reader
	w *lockedWriter
}

// NewLineTransport reads requests from r and writes answers to w (stdin and stdout for a
// runtime that starts `cotal mcp`).
func NewLineTransport(r io.Reader, w io.Writer) *LineTransport {
	return &LineTransport{r: r, w: &lockedWriter{w: w}}
}

// Connect implements mcp.Transport. The goroutine it starts copies r's valid lines to the
// SDK's connection; it ends at r's end or once the connection is closed and the next line
// arrives (a read of stdin cannot be interrupted, the same limit the SDK's transport has).
func (t *LineTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	pr, pw := io.Pipe()
	go func() { _ = pw.CloseWithError(t.copyValid(pw)) }()
	return (&mcp.IOTransport{Reader: pr, Writer: t.w}).Connect(ctx)
}

// copyValid copies each line of t.r that is JSON to dst and answers every other non-blank
// line with parseError. A line longer than the SDK's bound ends the copy with an error.
func (t *LineTransport) copyValid(dst io.Writer) error {
	sc := bufio.NewScanner(t.r)
	sc.Buffer(make([]byte, 0, 64*1024), mcp.DefaultMaxLineLength)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		switch {
		case len(line) == 0:
			continue
		case !json.Valid(line):
			if _, err := t.w.Write(parseError); err != nil {
				return err
			}
			continue
		}
		// line is the scanner's buffer, which the next line overwrites: send a copy.
		if _, err := dst.Write(append(bytes.Clone(line), '\n')); err != nil {
			return err
		}
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		return fmt.Errorf("a request line is longer than %d bytes", mcp.DefaultMaxLineLength)
	}
	return sc.Err()
}

// lockedWriter serialises writes, so that a parse error is never written into the middle of
// one of the SDK's messages.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close implements io.Closer for mcp.IOTransport; the writer it wraps stays open.
func (l *lockedWriter) Close() error { return nil }
