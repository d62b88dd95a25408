package agentfile

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the testdata/*.golden files")

// TestParseGolden parses each testdata/*.md and compares the agent as JSON, or the error, with
// its .golden file.
func TestParseGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var buf strings.Builder
			if a, err := Parse(path, data); err != nil {
				buf.WriteString("error: " + err.Error() + "\n")
			} else {
				enc := json.NewEncoder(&buf)
				enc.SetEscapeHTML(false)
				enc.SetIndent("", "  ")
				if err := enc.Encode(a); err != nil {
					t.Fatal(err)
				}
			}
			got := []byte(buf.String())
			golden := strings.TrimSuffix(path, Ext) + ".golden"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v; run go test -update to write it", err)
			}
			if string(got) != string(want) {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestParseRefuses names, per attack on the grants a file declares, the line and reason.
func TestParseRefuses(t *testing.T) {
	tests := []struct {
		file, want string
	}{
		{"bad-grant.md", "bad-grant.md:6: invalid agent file: invalid grant: allowPublish entry"},
		{"subscribe-outside.md", "subscribe-outside.md:3: invalid agent file: invalid grant: subscribe entry \"ops\" is outside allowSubscribe"},
		{"profile-admin.md", "profile-admin.md:3: invalid agent file: an agent file mints agent credentials only"},
		{"name-traversal.md", "name-traversal.md:2: invalid agent file: name \"../x\""},
		{"name-control.md", "name-control.md:2: invalid agent file: name \"a\\x1b[2Jb\""},
		{"renamed-channels.md", "renamed-channels.md:3: invalid agent file: \"channels\" was renamed"},
		{"duplicate-key.md", "duplicate-key.md:4: invalid agent file: \"allowPublish\" is given twice"},
		{"bad-role.md", "bad-role.md:3: invalid agent file: invalid grant: role \"code review\""},
		{"bad-kind.md", "bad-kind.md:3: invalid agent file: kind \"robot\""},
		{"no-frontmatter.md", "no-frontmatter.md: invalid agent file: it must open with"},
		{"no-name.md", "no-name.md:2: invalid agent file: the name is empty"},
		{"alias.md", "invalid agent file"},
		{"nested.md", "nested.md:3: invalid agent file: subscribe must be a list"},
		{"bad-capability.md", "bad-capability.md:5: invalid agent file: capability \"rule-the-world\" is unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", tt.file)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Parse(path, data)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse = %v; want ErrInvalid containing %q", err, tt.want)
			}
		})
	}
}

func TestWideGrantsNameTheirLines(t *testing.T) {
	a, err := Parse("w.md", []byte("---\nname: w\nsubscribe: [general]\nallowSubscribe: [general, \"*.alerts\"]\nallowPublish:\n  - team.x\n  - \">\"\n---\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`w.md:4: allowSubscribe "*.alerts"`, `w.md:7: allowPublish ">"`}
	if got := a.WideGrants(); !reflect.DeepEqual(got, want) {
		t.Errorf("WideGrants = %q, want %q", got, want)
	}
}

func TestFormatReadsBack(t *testing.T) {
	tests := []Agent{
		{Name: "solo"},
		{Name: "full", Role: "review", Kind: "endpoint", Description: "says: \"hi\", # not a comment",
			Tags: []string{"a b", "yes", "1"}, Subscribe: []string{"general"}, AllowSubscribe: []string{"general", "team.>"},
			AllowPublish: []string{"team.*"}, Model: "opus", Persona: "Line one.\n\nLine: two."},
	}
	for _, want := range tests {
		t.Run(want.Name, func(t *testing.T) {
			text, err := want.Format()
			if err != nil {
				t.Fatal(err)
			}
			got, err := Parse("x.md", text)
			if err != nil {
				t.Fatalf("%v; text:\n%s", err, text)
			}
			if !sameAgent(got, &want) {
				t.Errorf("read back %+v from\n%s\nwant %+v", got, text, want)
			}
		})
	}
}

func TestFormatRefusesWhatParseRefuses(t *testing.T) {
	for _, a := range []Agent{{Name: "../x"}, {Name: "ok", AllowPublish: []string{"a/b"}}} {
		if _, err := a.Format(); !errors.Is(err, ErrInvalid) {
			t.Errorf("Format(%+v) = %v, want ErrInvalid", a, err)
		}
	}
}

// sameAgent compares the exported fields.
func sameAgent(a, b *Agent) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.md"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := Parse("f.md", data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		if CheckName(a.Name) != nil || a.Grants().Validate() != nil {
			t.Fatalf("accepted %+v with a bad name or grants", a)
		}
		text, err := a.Format()
		if err != nil {
			t.Fatalf("Format of an accepted file: %v", err)
		}
		b, err := Parse("f.md", text)
		if err != nil || !sameAgent(a, b) {
			t.Fatalf("round trip: %v\n%+v\n%+v\n%s", err, a, b, text)
		}
	})
}

func TestParseRefusesWhatNoLauncherCouldPass(t *testing.T) {
	big := "---\nname: big\n---\n" + strings.Repeat("x", MaxSize)
	for name, data := range map[string]string{"a file over MaxSize": big, "bytes that are not UTF-8": "---\nname: a\n---\n\xff"} {
		if _, err := Parse("x.md", []byte(data)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Parse = %v, want ErrInvalid", name, err)
		}
	}
}
