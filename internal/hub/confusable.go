package hub

import (
	"fmt"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Two agents whose names look alike on screen (bob, and bоb with a Cyrillic
// о) invite messages to the wrong one; an impostor would choose such a name
// on purpose. Join refuses a name whose skeleton equals an existing agent's.
//
// The skeleton follows the idea of Unicode TS #39 with a small table rather
// than the full confusables file: compatibility decomposition (NFKD, which
// folds fullwidth, mathematical and ligature forms), combining marks dropped
// (é is e), the table below, then lower case (Bob is bob). The table covers
// the Cyrillic and Greek letters that are drawn like Latin ones in common
// fonts, a few Latin look-alikes (dotless ı, ɑ, ɡ, ǀ), and the digits 0 and 1.
// Scripts beyond Latin, Cyrillic and Greek are compared only as NFKD and case
// make them equal.

var homoglyphs = map[rune]rune{
	// Cyrillic lower case.
	'а': 'a', 'в': 'b', 'е': 'e', 'ѕ': 's', 'і': 'i', 'ј': 'j', 'к': 'k', 'м': 'm', 'н': 'h',
	'о': 'o', 'р': 'p', 'с': 'c', 'т': 't', 'у': 'y', 'х': 'x', 'ԁ': 'd', 'ԛ': 'q', 'ԝ': 'w',
	'һ': 'h', 'ӏ': 'l', 'ь': 'b', 'ү': 'y', 'г': 'r', 'п': 'n',
	// Cyrillic upper case.
	'А': 'a', 'В': 'b', 'Е': 'e', 'Ѕ': 's', 'І': 'l', 'Ј': 'j', 'К': 'k', 'М': 'm', 'Н': 'h',
	'О': 'o', 'Р': 'p', 'С': 'c', 'Т': 't', 'У': 'y', 'Х': 'x', 'Ԛ': 'q', 'Ԝ': 'w', 'Ӏ': 'l',
	// Greek lower case.
	'α': 'a', 'β': 'b', 'γ': 'y', 'ε': 'e', 'ι': 'i', 'κ': 'k', 'ν': 'v', 'ο': 'o', 'ρ': 'p',
	'τ': 't', 'υ': 'u', 'χ': 'x', 'ω': 'w',
	// Greek upper case.
	'Α': 'a', 'Β': 'b', 'Ε': 'e', 'Ζ': 'z', 'Η': 'h', 'Ι': 'l', 'Κ': 'k', 'Μ': 'm', 'Ν': 'n',
	'Ο': 'o', 'Ρ': 'p', 'Τ': 't', 'Υ': 'y', 'Χ': 'x',
	// Latin and digits.
	'ı': 'i', 'ɑ': 'a', 'ɡ': 'g', 'ǀ': 'l', 'I': 'l', '1': 'l', '0': 'o',
}

// Skeleton returns the form of name that two confusable names share.
func Skeleton(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	// Invalid UTF-8 is made valid first, so the skeleton is a fixed point of
	// itself (the normaliser and the range loop treat stray bytes differently).
	for _, r := range norm.NFKD.String(strings.ToValidUTF8(name, "\uFFFD")) {
		if unicode.Is(unicode.Mn, r) {
			continue
		}
		// Mapped before lower case (I is l, not i), and after (Ω lowers to ω).
		if m, ok := homoglyphs[r]; ok {
			r = m
		}
		r = unicode.ToLower(r)
		if m, ok := homoglyphs[r]; ok {
			r = m
		}
		b.WriteRune(r)
	}
	return b.String()
}

// confusableWith returns the first of names, other than name itself, that
// looks like name, or "".
func confusableWith(name string, names []string) string {
	sk := Skeleton(name)
	for _, n := range names {
		if n != name && Skeleton(n) == sk {
			return n
		}
	}
	return ""
}

// describeRunes names the characters of the names outside ASCII, so that an
// error says why two names that look the same differ.
func describeRunes(names ...string) string {
	var parts []string
	for _, r := range strings.Join(names, "") {
		if r < 0x80 {
			continue
		}
		script := "other script"
		for _, t := range []struct {
			name string
			tab  *unicode.RangeTable
		}{{"Cyrillic", unicode.Cyrillic}, {"Greek", unicode.Greek}, {"Latin", unicode.Latin}} {
			if unicode.Is(t.tab, r) {
				script = t.name
				break
			}
		}
		parts = append(parts, fmt.Sprintf("%c is %U, %s", r, r, script))
	}
	if len(parts) == 0 {
		return "they differ only in case or in 0/o, 1/l, I/l"
	}
	return strings.Join(parts, "; ")
}
