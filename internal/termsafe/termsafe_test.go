package termsafe_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cotal-go/cotal/internal/termsafe"
)

var cases = []struct {
	name, in, str, text string
}{
	{"plain text is shown as written", "hello, bob", "hello, bob", "hello, bob"},
	{"other scripts, emoji and a backslash are shown as written", `grüße 日本語 مرحبا ❤️ 👩‍💻? no: \x1b`,
		`grüße 日本語 مرحبا ❤️ 👩\u200d💻? no: \x1b`, `grüße 日本語 مرحبا ❤️ 👩\u200d💻? no: \x1b`},
	{"a window title (OSC 0) shows its ESC and BEL", "\x1b]0;owned\x07", `\x1b]0;owned\a`, `\x1b]0;owned\a`},
	{"a clipboard write (OSC 52) shows its ESC", "\x1b]52;c;cm0=\x1b\\", `\x1b]52;c;cm0=\x1b\`, `\x1b]52;c;cm0=\x1b\`},
	{"a link (OSC 8) shows its ESC", "\x1b]8;;https://evil.example/\x07x", `\x1b]8;;https://evil.example/\ax`, `\x1b]8;;https://evil.example/\ax`},
	{"a carriage return and erase-line cannot forge a line", "ok\r\x1b[2Kbob: hi", `ok\r\x1b[2Kbob: hi`, `ok\r\x1b[2Kbob: hi`},
	{"a screen clear shows", "\x1b[2J", `\x1b[2J`, `\x1b[2J`},
	{"DEL and NUL show", "a\x7fb\x00", `a\x7fb\x00`, `a\x7fb\x00`},
	{"a C1 CSI shows", "\u009b31m", `\u009b31m`, `\u009b31m`},
	{"bidi controls show", "a\u202eb\u2066c\u200ed\u061c", `a\u202eb\u2066c\u200ed\u061c`, `a\u202eb\u2066c\u200ed\u061c`},
	{"zero-width and invisible characters show", "a\u200bb\u2060c\ufeffd\u00ade\u3164", `a\u200bb\u2060c\ufeffd\u00ade\u3164`, `a\u200bb\u2060c\ufeffd\u00ade\u3164`},
	{"tag characters and a supplementary variation selector show", "x\U000e0041\U000e0100", `x\U000e0041\U000e0100`, `x\U000e0041\U000e0100`},
	{"line and paragraph separators show", "a\u2028b\u2029", `a\u2028b\u2029`, `a\u2028b\u2029`},
	{"a newline and a tab show in a field and stay in text", "one\ntwo\tthree", `one\ntwo\tthree`, "one\ntwo\tthree"},
	{"a vertical tab and a form feed show in text too", "a\vb\fc", `a\vb\fc`, `a\vb\fc`},
	{"invalid UTF-8 shows byte by byte", "a\xffb\xc2", `a\xffb\xc2`, `a\xffb\xc2`},
	{"a lone C1 byte shows as a byte", "\x9b31m", `\x9b31m`, `\x9b31m`},
	{"a written U+FFFD stays", "a\ufffdb", "a\ufffdb", "a\ufffdb"},
}

func TestStringAndText(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := termsafe.String(tc.in); got != tc.str {
				t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.str)
			}
			if got := termsafe.Text(tc.in); got != tc.text {
				t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.text)
			}
		})
	}
}

func TestEscapes(t *testing.T) {
	for _, r := range []rune{0, '\a', '\n', '\t', '\r', 0x1b, 0x1f, 0x7f, 0x80, 0x9b, 0x9f, 0xad, 0x61c, 0x115f, 0x180e,
		0x200b, 0x200c, 0x200d, 0x200e, 0x200f, 0x2028, 0x2029, 0x202a, 0x202e, 0x2060, 0x2066, 0x2069, 0xfeff,
		0xfff9, 0xe0000, 0xe0001, 0xe007f, 0xe0100, 0xe01ef} {
		if !termsafe.Escapes(r) {
			t.Errorf("Escapes(%U) = false, want true", r)
		}
	}
	for _, r := range []rune{' ', 'a', '~', '\\', 0xa0, 0xe9, 0x300, 0x5d0, 0x627, 0x3000, 0xfe0f, 0xfffd, 0x1f600, 0xe000} {
		if termsafe.Escapes(r) {
			t.Errorf("Escapes(%U) = true, want false", r)
		}
	}
}

// FuzzString checks the package's guarantees on any input: no escaped rune in the output (by
// Escapes and by the fixed list), valid UTF-8, the same output for the same input, and the
// identity on valid text without such a rune.
func FuzzString(f *testing.F) {
	for _, tc := range cases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		for _, keepLines := range []bool{false, true} {
			escape := termsafe.String
			if keepLines {
				escape = termsafe.Text
			}
			out := escape(in)
			if !utf8.ValidString(out) {
				t.Fatalf("escape(%q) = %q, not valid UTF-8", in, out)
			}
			for _, r := range out {
				if (termsafe.Escapes(r) || listed(r)) && !(keepLines && (r == '\n' || r == '\t')) {
					t.Fatalf("escape(%q) = %q holds %U raw", in, out, r)
				}
			}
			if again := escape(in); again != out {
				t.Fatalf("escape(%q) is %q, then %q", in, out, again)
			}
			if clean(in, keepLines) && out != in {
				t.Fatalf("escape(%q) = %q, want the input unchanged", in, out)
			}
		}
	})
}

// listed reports whether r is one of the runes the package names as never written raw,
// independently of the Unicode tables Escapes reads: C0, DEL, C1, the bidi controls and the
// zero-width characters.
func listed(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069,
		r >= 0x200b && r <= 0x200f, r == 0x061c, r == 0x2060, r == 0xfeff:
		return true
	}
	return false
}

// clean reports whether s is valid UTF-8 without a rune escape rewrites.
func clean(s string, keepLines bool) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool {
		return termsafe.Escapes(r) && !(keepLines && (r == '\n' || r == '\t'))
	})
}

func ExampleString() {
	fmt.Println(termsafe.String("bob\x1b]0;owned\x07\u202e"))
	fmt.Println(termsafe.Text("line one\n\tline two\r"))
	// Output:
	// bob\x1b]0;owned\a\u202e
	// line one
	// 	line two\r
}
