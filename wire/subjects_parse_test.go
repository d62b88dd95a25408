package wire

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The SPEC §12 sample ids.
const (
	vecAlice = "UAQGWOEVJKMIO4WXSYOTLARXYOZTCXFK67JASEH6AFFFYK6FOPSKQCAD"
	vecBob   = "UDI36ZKVNUM5WMO4QQ6HDQU7F4OH2RCXOJRX6GAIOS5SKVNNSKCDNLJA"
)

// subjectVector is one row of testdata/subjects.json.
type subjectVector struct {
	Subject string `json:"subject"`
	OK      bool   `json:"ok"`
	Space   string `json:"space"`
	Kind    Kind   `json:"kind"`
	Sender  string `json:"sender"`
	Rest    string `json:"rest"`
	Note    string `json:"note"`
}

// readRepoTestdata reads a shared vector file from the repository's testdata directory.
func readRepoTestdata(tb testing.TB, name string) []byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", name))
	if err != nil {
		tb.Fatalf("read shared vectors: %v", err)
	}
	return data
}

func loadSubjectVectors(tb testing.TB) []subjectVector {
	tb.Helper()
	var file struct {
		Vectors []subjectVector `json:"vectors"`
	}
	if err := json.Unmarshal(readRepoTestdata(tb, "subjects.json"), &file); err != nil {
		tb.Fatalf("decode subjects.json: %v", err)
	}
	if len(file.Vectors) == 0 {
		tb.Fatal("subjects.json has no vectors")
	}
	return file.Vectors
}

func TestParseSubjectMatchesTheSpecVectors(t *testing.T) {
	for _, v := range loadSubjectVectors(t) {
		t.Run(v.Subject, func(t *testing.T) {
			got, err := ParseSubject(v.Subject)
			if !v.OK {
				if reason, _ := ReasonOf(err); reason != ReasonMalformedSubject {
					t.Fatalf("ParseSubject = %+v, %v; want a malformed-subject anomaly (%s)", got, err, v.Note)
				}
				return
			}
			want := Subject{Space: v.Space, Kind: v.Kind, Sender: v.Sender, Rest: v.Rest}
			if err != nil || got != want {
				t.Fatalf("ParseSubject = %+v, %v; want %+v", got, err, want)
			}
		})
	}
}

func TestParseSubjectLocatesTheSenderByKind(t *testing.T) {
	n := NewNames("main")
	tests := []struct {
		name    string
		subject string
		want    Subject
	}{
		{"a one-segment channel is the rest of a chat subject", n.ChatSubject(vecAlice, "general"),
			Subject{"main", KindChat, vecAlice, "general"}},
		{"a deep channel keeps all its segments", n.ChatSubject(vecAlice, "a.b.c.d"),
			Subject{"main", KindChat, vecAlice, "a.b.c.d"}},
		{"a unicast target is token 3 and the sender token 4", n.InstSubject(vecBob, vecAlice),
			Subject{"main", KindInst, vecAlice, vecBob}},
		{"an anycast role is token 3", n.SvcSubject("reviewer", vecBob),
			Subject{"main", KindSvc, vecBob, "reviewer"}},
		{"a control service is token 3", n.CtlSubject(DeliveryService, vecBob),
			Subject{"main", KindCtl, vecBob, DeliveryService}},
		{"tokens may hold dashes and underscores", "cotal.my-space.chat.open_id.team-a.x_y",
			Subject{"my-space", KindChat, "open_id", "team-a.x_y"}},
		{"a channel of MaxChannelLen bytes", n.ChatSubject(vecAlice, strings.Repeat("a", MaxChannelLen)),
			Subject{"main", KindChat, vecAlice, strings.Repeat("a", MaxChannelLen)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSubject(tt.subject)
			if err != nil || got != tt.want {
				t.Fatalf("ParseSubject(%q) = %+v, %v; want %+v", tt.subject, got, err, tt.want)
			}
		})
	}
}

func TestParseSubjectRefusesEveryOtherShape(t *testing.T) {
	tests := []struct{ name, subject string }{
		{"an empty subject", ""},
		{"a wrong root", "nats.main.chat." + vecAlice + ".general"},
		{"a root in another case", "Cotal.main.chat." + vecAlice + ".general"},
		{"a chat subject without a channel", "cotal.main.chat." + vecAlice},
		{"a unicast subject with a sixth token", "cotal.main.inst." + vecBob + "." + vecAlice + ".x"},
		{"a unicast subject without a sender", "cotal.main.inst." + vecBob},
		{"an anycast subject with a sixth token", "cotal.main.svc.reviewer." + vecAlice + ".x"},
		{"a control reply subject", "cotal.main.ctl.delivery." + vecAlice + ".reply.x"},
		{"an unknown kind", "cotal.main.trace." + vecAlice + ".x"},
		{"the reserved control-plane kind", "cotal.main.control." + vecAlice + ".x"},
		{"a backstop subject", "cotal.main.dinbox." + vecAlice + ".x"},
		{"an empty space", "cotal..chat." + vecAlice + ".general"},
		{"an empty channel segment", "cotal.main.chat." + vecAlice + ".team..a"},
		{"a trailing dot", "cotal.main.chat." + vecAlice + ".general."},
		{"a star sender", "cotal.main.chat.*.general"},
		{"a full-wildcard channel", "cotal.main.chat." + vecAlice + ".>"},
		{"a star channel segment", "cotal.main.chat." + vecAlice + ".team.*"},
		{"an unsanitized token", "cotal.main.chat." + vecAlice + ".team backend"},
		{"a non-ASCII token", "cotal.main.chat." + vecAlice + ".caf\u00e9"},
		{"a channel past MaxChannelLen", "cotal.main.chat." + vecAlice + "." + strings.Repeat("a", MaxChannelLen+1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSubject(tt.subject)
			if err == nil {
				t.Fatalf("ParseSubject(%q) = %+v, want an error", tt.subject, got)
			}
			if !errors.Is(err, ErrMalformedSubject) {
				t.Fatalf("error %v does not wrap ErrMalformedSubject", err)
			}
			if reason, ok := ReasonOf(err); !ok || reason != ReasonMalformedSubject {
				t.Fatalf("ReasonOf = %q, %v; want malformed-subject", reason, ok)
			}
		})
	}
}

func TestCheckApplicationSubjectRefusesReservedPrefixes(t *testing.T) {
	tests := []struct {
		subject  string
		reserved bool
	}{
		{"$JS.API.STREAM.INFO.CHAT_main", true},
		{"$KV.cotal_presence_main.x", true},
		{"$SYS.REQ.SERVER.PING", true},
		{"$OBJ.store.x", true},
		{"_INBOX.abc", true},
		{"cotal.main.chat.x.general", false},
		{"_INBOX_UAQ.reply", false},
		{"$js.lowercase.is.not.the.api", false},
	}
	for _, tt := range tests {
		t.Run(tt.subject, func(t *testing.T) {
			err := CheckApplicationSubject(tt.subject)
			if got := errors.Is(err, ErrReservedSubject); got != tt.reserved {
				t.Fatalf("CheckApplicationSubject(%q) = %v; reserved = %v", tt.subject, err, tt.reserved)
			}
			if tt.reserved && !strings.Contains(err.Error(), tt.subject) {
				t.Fatalf("error %q does not name the subject", err)
			}
		})
	}
}
