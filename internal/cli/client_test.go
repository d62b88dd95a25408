package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/wire"
)

func TestParseTarget(t *testing.T) {
	const id = "UDTK2MEYYY33WROIB3F52XDRY3UOQ2FVWDPANSEP4ZM3VXTTO4XW6LZO"
	tests := []struct {
		name, in string
		want     target
		wantErr  string
	}{
		{name: "a concrete channel is a multicast", in: "team.backend", want: target{kind: endpoint.MetaChannel, channel: "team.backend"}},
		{name: "an @name is a DM resolved by name", in: "@alice", want: target{kind: endpoint.MetaDM, name: "alice"}},
		{name: "an instance id is a DM", in: id, want: target{kind: endpoint.MetaDM, id: id}},
		{name: "svc:role is an anycast", in: "svc:reviewer", want: target{kind: endpoint.MetaAnycast, role: "reviewer"}},
		{name: "a wildcard channel is refused", in: "team.>", wantErr: "concrete"},
		{name: "a bare @ is refused", in: "@", wantErr: "after the @"},
		{name: "a role with a dot is refused", in: "svc:a.b", wantErr: "letters, digits"},
		{name: "an empty segment is refused", in: "a..b", wantErr: "svc:ROLE"},
		{name: "an id with a bad checksum is not read as a channel", in: id[:55] + "A", wantErr: "checksum is wrong"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseTarget(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseTarget(%q) = %+v, %v; want an error with %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("parseTarget(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestMessageText(t *testing.T) {
	tests := []struct {
		name, stdin string
		args        []string
		want        string
		wantErr     bool
	}{
		{name: "an argument is the text", args: []string{"hi"}, stdin: "ignored", want: "hi"},
		{name: "no argument reads stdin without its final newline", stdin: "line one\nline two\n", want: "line one\nline two"},
		{name: "a dash reads stdin", args: []string{"-"}, stdin: "piped", want: "piped"},
		{name: "empty stdin is refused", stdin: "\n", wantErr: true},
		{name: "stdin of only whitespace is refused", stdin: "  \n", wantErr: true},
		{name: "an empty argument is refused", args: []string{""}, stdin: "ignored", wantErr: true},
		{name: "an argument of only whitespace is refused", args: []string{" \t"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := messageText(strings.NewReader(tt.stdin), tt.args)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("messageText = %q, %v; want %q (error %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestPrinterLines(t *testing.T) {
	msg := func(id string, parts ...wire.Part) *wire.CotalMessage {
		return &wire.CotalMessage{ID: id, TS: time.Now().UnixMilli(), Space: "main",
			From: wire.EndpointRef{ID: "U1", Name: "bob"}, ToService: "reviewer", Parts: parts}
	}
	dmTo := func(to string, parts ...wire.Part) *wire.CotalMessage {
		m := msg("6", parts...)
		m.ToService, m.To = "", to
		return m
	}
	data, _ := wire.DataPart(map[string]int{"n": 1})
	tests := []struct {
		name string
		it   item
		want []string
	}{
		{"a channel line names the channel and sender", item{Kind: endpoint.MetaChannel, Channel: "general", Message: msg("1", wire.TextPart("hi"))},
			[]string{"#general bob: hi"}},
		{"a history line is marked", item{Kind: endpoint.MetaChannel, Channel: "general", Historical: true, Message: msg("2", wire.TextPart("old"))},
			[]string{"bob: old (history)"}},
		{"a DM line says dm", item{Kind: endpoint.MetaDM, Message: msg("3", wire.TextPart("psst"))}, []string{" dm bob: psst"}},
		{"a DM to someone else names the recipient", item{Kind: endpoint.MetaDM, Message: dmTo("UALICE", wire.TextPart("psst"))},
			[]string{" dm bob → UALICE: psst"}},
		{"an anycast line names the role, data parts print as JSON", item{Kind: endpoint.MetaAnycast, Message: msg("4", data)},
			[]string{`svc:reviewer bob: {"n":1}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			p := newPrinter(&out, &out, false, true)
			if err := p.print(tt.it); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("line %q does not contain %q", &out, w)
				}
			}
			if strings.Contains(out.String(), "\x1b[") {
				t.Errorf("colour written to a buffer: %q", &out)
			}
		})
	}
	t.Run("a message id prints once", func(t *testing.T) {
		var out bytes.Buffer
		p := newPrinter(&out, &out, true, true)
		it := item{Kind: endpoint.MetaChannel, Channel: "general", Message: msg("5", wire.TextPart("x"))}
		_ = p.print(it)
		_ = p.print(it)
		var got item
		if n := strings.Count(out.String(), "\n"); n != 1 || json.Unmarshal(out.Bytes(), &got) != nil || got.Channel != "general" {
			t.Fatalf("--json printed %d lines: %q", n, &out)
		}
	})
}

func TestColorOn(t *testing.T) {
	// The null device is a character device, as a terminal is; colorOn tells them apart no
	// further, and a test machine has no terminal.
	tty, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	t.Setenv("NO_COLOR", "")
	if !colorOn(tty, false) {
		t.Error("no colour on a terminal")
	}
	if colorOn(tty, true) {
		t.Error("colour with --json")
	}
	t.Setenv("NO_COLOR", "1")
	if colorOn(tty, false) {
		t.Error("colour with NO_COLOR set")
	}
}

func TestColorOffForPipesAndFiles(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if colorOn(f, false) || colorOn(&bytes.Buffer{}, false) {
		t.Fatal("colour written to a file or buffer")
	}
}

func TestWindowTextKeepsTheWrittenForm(t *testing.T) {
	day := &wire.ChannelDefaults{ReplayWindow: "24h"}
	for _, tt := range []struct {
		name string
		c    *wire.ChannelConfig
		want string
	}{
		{"the default's text when the channel sets none", nil, "24h"},
		{"the channel's own text when it sets one", &wire.ChannelConfig{ReplayWindow: "7d"}, "7d"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := effectiveRow("x", 0, tt.c, day).ReplayWindow; got != tt.want {
				t.Fatalf("window %q, want %q", got, tt.want)
			}
		})
	}
}
