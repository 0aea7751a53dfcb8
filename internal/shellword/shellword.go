// Package shellword reads a shell command line as a POSIX shell would run
// it, for decisions that must match exactly what a person approved (a
// permission rule's command, a hook that Parley wrote). It accepts one
// simple command only: a program and its arguments, words as the shell
// would pass them (quotes and backslashes undone). Anything that would make
// the shell run more, or other, than those words is refused, with the
// reason: chaining (; & && || |), substitution ($, backquotes), redirection
// (< >), grouping, a newline, globbing, tilde and brace expansion, a
// comment, an environment assignment before the program, and characters
// that do not show as themselves (controls, Unicode line separators,
// bidirectional controls).
//
// It is a leaf: it imports only the standard library.
package shellword

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode"
)

// Parse returns the words of s, one simple command, or why it is not one.
func Parse(s string) ([]string, error) {
	ws, err := parse(s, false)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.text
	}
	return out, nil
}

// Pattern is a parsed command pattern: words, of which an unquoted * in one
// stands for any characters within that word, and a last word of a lone
// unquoted * for any further arguments (none too); a lone * alone is any
// one command.
type Pattern struct {
	words []word
	rest  bool // the last word was a lone *: any further arguments
}

// ParsePattern parses a command pattern: Parse's rules, but an unquoted *
// is a wildcard.
func ParsePattern(s string) (Pattern, error) {
	ws, err := parse(s, true)
	if err != nil {
		return Pattern{}, err
	}
	var p Pattern
	if n := len(ws); ws[n-1].text == "*" && ws[n-1].glob {
		p.rest, ws = true, ws[:n-1]
	}
	if len(ws) > 0 && ws[0].glob {
		return Pattern{}, errors.New("the program cannot be a wildcard: name it")
	}
	p.words = ws
	return p, nil
}

// Exact reports whether the pattern has no wildcard: it matches one
// command only.
func (p Pattern) Exact() bool {
	if p.rest {
		return false
	}
	for _, w := range p.words {
		if w.glob {
			return false
		}
	}
	return true
}

// Words are the pattern's words as written (a wildcard word with its *).
func (p Pattern) Words() []string {
	out := make([]string, 0, len(p.words)+1)
	for _, w := range p.words {
		out = append(out, w.text)
	}
	if p.rest {
		out = append(out, "*")
	}
	return out
}

// Match reports whether the command's words match the pattern.
func (p Pattern) Match(words []string) bool {
	if len(words) < len(p.words) || (!p.rest && len(words) != len(p.words)) {
		return false
	}
	for i, w := range p.words {
		if !w.match(words[i]) {
			return false
		}
	}
	return true
}

// word is one word: its text, and for a pattern whether it holds a
// wildcard (then text has each unquoted * as \x00, and literal text).
type word struct {
	text string
	glob bool
	raw  string // the pattern's word with wildcards as NUL
}

func (w word) match(s string) bool {
	if !w.glob {
		return w.text == s
	}
	parts := strings.Split(w.raw, "\x00")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for i, part := range parts[1:] {
		if i == len(parts)-2 { // the last part: the end of s
			return strings.HasSuffix(s, part)
		}
		j := strings.Index(s, part)
		if j < 0 {
			return false
		}
		s = s[j+len(part):]
	}
	return true
}

// Error says why a command line is not one simple command.
type Error struct {
	Line   string // the command line
	Reason string
}

func (e *Error) Error() string { return e.Reason }

// parse reads s; with pattern, an unquoted * is a wildcard.
func parse(s string, pattern bool) ([]word, error) {
	fail := func(format string, args ...any) ([]word, error) {
		return nil, &Error{Line: s, Reason: fmt.Sprintf(format, args...)}
	}
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r':
			return fail("a newline starts another command")
		case r == '\t':
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Cf, r) || r == unicode.ReplacementChar:
			return fail("it holds %U, which does not show as itself", r)
		}
	}
	var words []word
	var cur, raw strings.Builder
	in, glob, quotedAny := false, false, false
	end := func() {
		if in {
			words = append(words, word{text: cur.String(), glob: glob, raw: raw.String()})
		}
		cur.Reset()
		raw.Reset()
		in, glob, quotedAny = false, false, false
	}
	lit := func(r rune) {
		cur.WriteRune(r)
		raw.WriteRune(r)
		in = true
	}
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		start := !in
		switch {
		case r == ' ' || r == '\t':
			end()
		case r == '\'':
			j := i + 1
			for j < len(rs) && rs[j] != '\'' {
				j++
			}
			if j == len(rs) {
				return fail("a quote (') is not closed")
			}
			for _, q := range rs[i+1 : j] {
				lit(q)
			}
			in, quotedAny = true, true
			i = j
		case r == '"':
			j := i + 1
			for ; j < len(rs) && rs[j] != '"'; j++ {
				switch rs[j] {
				case '$', '`':
					return fail("%q in double quotes substitutes the output or value of something else", rs[j])
				case '\\':
					if j+1 < len(rs) && strings.ContainsRune("$`\"\\", rs[j+1]) {
						j++
					}
				}
				lit(rs[j])
			}
			if j == len(rs) {
				return fail(`a quote (") is not closed`)
			}
			in, quotedAny = true, true
			i = j
		case r == '\\':
			if i+1 == len(rs) {
				return fail("it ends in a backslash")
			}
			i++
			lit(rs[i])
			quotedAny = true
		case strings.ContainsRune(";&|", r):
			return fail("%q chains another command", r)
		case r == '<' || r == '>':
			return fail("%q redirects input or output", r)
		case r == '$' || r == '`':
			return fail("%q substitutes the output or value of something else", r)
		case r == '(' || r == ')' || r == '{' || r == '}':
			return fail("%q groups or expands commands or words", r)
		case r == '*' && pattern:
			cur.WriteRune('*')
			raw.WriteRune(0)
			in, glob = true, true
		case r == '*' || r == '?' || r == '[' || r == ']':
			return fail("%q expands to file names", r)
		case r == '~':
			return fail("~ expands to a home directory")
		case r == '#' && start:
			return fail("# starts a comment")
		case r == '!':
			return fail("! negates or expands")
		case r == '=' && len(words) == 0 && !quotedAny && isName(cur.String()):
			return fail("%s= before the program sets its environment", cur.String())
		default:
			lit(r)
		}
	}
	end()
	if len(words) == 0 {
		return fail("no command")
	}
	return words, nil
}

// isName reports whether s is a shell variable's name.
func isName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r < 0x80 && unicode.IsLetter(r) || i > 0 && r < 0x80 && unicode.IsDigit(r)) {
			return false
		}
	}
	return true
}

// FromArgv is the words of a command given as a program and its arguments
// (Codex's command arrays): the script of a shell run with -c or -lc, as
// Parse reads it, else the words themselves, none of which may hold a
// character that does not show as itself.
func FromArgv(argv []string) ([]string, error) {
	if len(argv) == 3 && (argv[1] == "-c" || argv[1] == "-lc") {
		switch path.Base(argv[0]) {
		case "sh", "bash", "zsh", "dash":
			return Parse(argv[2])
		}
	}
	if len(argv) == 0 {
		return nil, errors.New("no command")
	}
	for _, a := range argv {
		for _, r := range a {
			if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Cf, r) {
				return nil, &Error{Line: strings.Join(argv, " "), Reason: fmt.Sprintf("it holds %U, which does not show as itself", r)}
			}
		}
	}
	return argv, nil
}

// Quote renders words as a command line that Parse reads back as them.
func Quote(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = quoteWord(w, i == 0)
	}
	return strings.Join(out, " ")
}

// quoteWord quotes s unless it reads as itself; the program's word is
// quoted if it holds a '=' (it would read as an assignment).
func quoteWord(s string, program bool) string {
	safe := "@%+=:,./-_"
	if program {
		safe = "@%+:,./-_"
	}
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r)) || strings.ContainsRune(safe, r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
