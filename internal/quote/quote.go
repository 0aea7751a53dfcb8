// Package quote is the one rule by which Parley puts words it did not write
// (other agents' messages, a task's text, a reservation's reason) into text
// that a model reads: the letters written through a session's door, the
// hooks' context, the working set that SessionStart and PreCompact give
// back, a managed agent's wake-up prompt. Quoted words stay data: they
// cannot close the quote, start a line of the frame around them, or turn
// the text around them with bidirectional controls.
//
// It is a leaf: it imports only the standard library.
package quote

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Open and Close are the marks around a quoted line. The same marks inside
// the words become a plain '"', so that the words cannot close the quote.
const (
	Open  = "“"
	Close = "”"
)

// BlockPrefix starts every line of a quoted block.
const BlockPrefix = "> "

// Line quotes s on one line: every line break (\n, \r, NEL, U+2028,
// U+2029, vertical tab, form feed) becomes a space, and the rest as Clean
// has it, between Open and Close.
func Line(s string) string { return Open + flat(s) + Close }

// Block quotes s as lines that each start with BlockPrefix, so that no line
// of it can pose as a line of the text around it; each line as Clean has
// it. An empty s is one empty quoted line.
func Block(s string) string {
	var b strings.Builder
	for i, l := range lines(s) {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(BlockPrefix)
		b.WriteString(Clean(l))
	}
	return b.String()
}

// Clean is s without what could change how the text around it reads: a
// control character becomes a space (a tab too), a format character (the
// bidirectional embeddings, overrides, isolates and marks, zero-width
// spaces, the byte-order mark) becomes U+FFFD, which shows that something
// was there, and the quote marks Open and Close become '"'. The zero-width
// joiner stays: emoji need it. Line breaks are controls here; Line and
// Block handle them first.
func Clean(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\u201c' || r == '\u201d' || r == '\u201e' || r == '\u201f' || r == '\uff02':
			return '"'
		case r == '\u200d':
			return r
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029':
			return ' '
		case unicode.Is(unicode.Cf, r) || r == unicode.ReplacementChar:
			return unicode.ReplacementChar
		}
		return r
	}, s)
}

// flat is s on one line, cleaned.
func flat(s string) string { return Clean(strings.Join(lines(s), " ")) }

// lines splits s at every kind of line break: \n, \r\n, \r, NEL (U+0085),
// U+2028, U+2029, vertical tab and form feed.
func lines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch r {
		case '\n', '\r', '\v', '\f', '\u0085', '\u2028', '\u2029':
			out = append(out, s[start:i])
			if r == '\r' && i+1 < len(s) && s[i+1] == '\n' {
				n = 2
			}
			start = i + n
		}
		i += n
	}
	return append(out, s[start:])
}

// FirstLine is the first line of s that is not blank, trimmed and cut to n
// runes (with "…" when cut), not yet quoted: Line quotes it.
func FirstLine(s string, n int) string {
	for _, l := range lines(s) {
		if l = strings.TrimSpace(l); l != "" {
			if r := []rune(l); len(r) > n {
				return string(r[:n]) + "…"
			}
			return l
		}
	}
	return ""
}
