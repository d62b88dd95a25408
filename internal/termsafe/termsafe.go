// Package termsafe is the one output rule for text a peer controls, before it reaches a
// terminal or a model: a display name, role, activity, message text, mention, channel name or
// description from the registry. A terminal obeys the controls written to it and a model reads
// what it cannot see, so written raw such a string could set the window title (OSC 0), write
// the clipboard (OSC 52), make a link (OSC 8), clear the screen, return the cursor to forge a
// line from another sender, or reorder and hide text (bidi overrides, zero-width characters).
//
// Guarantees, for every input s, valid UTF-8 or not:
//   - String(s) holds no rune for which Escapes reports true and is valid UTF-8. Text(s) is the
//     same except that it keeps '\n' and '\t', so that a message of several lines stays
//     readable; a caller that prints it on a terminal indents the lines after the first, so no
//     line of a message can pass for a line of its own.
//   - Both are pure functions of s, and return s unchanged when it is valid UTF-8 without such
//     a rune: ordinary text in any script, and emoji without a joiner, show exactly as written.
//   - Each escaped rune shows visibly as Go writes it in a quoted string, in lower-case hex:
//     \a \b \t \n \v \f \r, \xNN for any other rune below U+0080, \uNNNN and \UNNNNNNNN for
//     the rest; each byte of invalid UTF-8 shows as \xNN.
//
// It does not:
//   - make the escaping reversible: a backslash is kept as is, so a peer's literal text \x1b
//     and an ESC show alike. What is shown is safe, not exact.
//   - escape the JSON outputs (--json, and the JSON a program decodes): those carry the exact
//     data, for programs. encoding/json escapes C0 controls there, but not C1 controls, bidi or
//     zero-width characters; a program that shows such values to a person escapes them itself.
//   - guard the layout: combining marks, variation selectors U+FE00–U+FE0F (which emoji need),
//     private-use and unassigned code points, wide characters and look-alike letters pass.
//   - spare the joiners: U+200C and U+200D are invisible, so they show escaped even where
//     they are meant (an emoji sequence such as 👩‍💻, a Persian or Indic word).
package termsafe

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escapes reports whether String writes r as an escape: a control character (C0, DEL, C1;
// category Cc), a format character (category Cf: the bidi controls U+061C, U+200E, U+200F,
// U+202A–U+202E and U+2066–U+2069, the zero-width U+200B–U+200D, U+2060 and U+FEFF, the
// soft hyphen, the tag characters U+E0000–U+E007F), the line and paragraph separators
// U+2028 and U+2029, the other default-ignorable code points (Hangul fillers, U+034F, ...),
// and the variation selectors U+E0100–U+E01EF, which no emoji needs and which can carry
// hidden bytes. The categories are those of the Unicode version Go's unicode package holds.
func Escapes(r rune) bool {
	if r >= ' ' && r < utf8.RuneSelf {
		return r == 0x7f
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Other_Default_Ignorable_Code_Point) ||
		r >= 0xe0100 && r <= 0xe01ef
}

// String is s with every rune Escapes reports, and every byte of invalid UTF-8, written as an
// escape: for a one-line field such as a name, a role, an activity or a table cell.
func String(s string) string { return escape(s, false) }

// Text is String that keeps '\n' and '\t', for a message's text; a terminal caller indents
// the lines after the first.
func Text(s string) string { return escape(s, true) }

// escape is String, or with keepLines Text.
func escape(s string, keepLines bool) string {
	i := firstEscape(s, keepLines)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			writeHex(&b, `\x`, uint32(s[i]), 2)
		case keeps(r, keepLines):
			b.WriteString(s[i : i+n])
		default:
			writeEscape(&b, r)
		}
		i += n
	}
	return b.String()
}

// firstEscape is the index of the first byte of s that escape rewrites, -1 if none.
func firstEscape(s string, keepLines bool) int {
	for i := 0; i < len(s); {
		if c := s[i]; c >= ' ' && c < 0x7f {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || !keeps(r, keepLines) {
			return i
		}
		i += n
	}
	return -1
}

// keeps reports whether escape writes the valid rune r as it is.
func keeps(r rune, keepLines bool) bool {
	return !Escapes(r) || keepLines && (r == '\n' || r == '\t')
}

// shortEscapes are the controls Go writes by letter in a quoted string.
var shortEscapes = map[rune]string{'\a': `\a`, '\b': `\b`, '\t': `\t`, '\n': `\n`, '\v': `\v`, '\f': `\f`, '\r': `\r`}

// writeEscape writes r as Go writes it in a quoted string.
func writeEscape(b *strings.Builder, r rune) {
	switch {
	case shortEscapes[r] != "":
		b.WriteString(shortEscapes[r])
	case r < utf8.RuneSelf:
		writeHex(b, `\x`, uint32(r), 2)
	case r <= 0xffff:
		writeHex(b, `\u`, uint32(r), 4)
	default:
		writeHex(b, `\U`, uint32(r), 8)
	}
}

// writeHex writes prefix, then v in digits lower-case hex digits.
func writeHex(b *strings.Builder, prefix string, v uint32, digits int) {
	const hex = "0123456789abcdef"
	b.WriteString(prefix)
	for shift := 4 * (digits - 1); shift >= 0; shift -= 4 {
		b.WriteByte(hex[v>>shift&0xf])
	}
}
