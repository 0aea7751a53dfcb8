package hub

import (
	"regexp"
	"strings"
	"testing"
)

func mustPattern(t testing.TB, s string) PathPattern {
	t.Helper()
	p, err := ParsePathPattern(s)
	if err != nil {
		t.Fatalf("ParsePathPattern(%q): %v", s, err)
	}
	return p
}

func TestPathPatternMatch(t *testing.T) {
	tests := []struct {
		pattern string
		yes     []string
		no      []string
	}{
		{"src/main.go", []string{"src/main.go"}, []string{"src/main.goo", "src", "main.go", "x/src/main.go"}},
		{"./src/main.go", []string{"src/main.go"}, []string{"./src/main.go"}},
		{"*.go", []string{"a.go", ".go"}, []string{"a/b.go", "a.gox"}},
		{"src/*.go", []string{"src/a.go"}, []string{"src/a/b.go", "a.go"}},
		{"src/**", []string{"src/a.go", "src/a/b/c.go", "src/"}, []string{"src", "srcx/a.go", "lib/src/a.go"}},
		{"src/", []string{"src/a.go", "src/a/b.go"}, []string{"src", "lib/a.go"}},
		{"**/*.go", []string{"a.go", "a/b.go", "a/b/c.go"}, []string{"a.goo", "a/b.c"}},
		{"src/**/test/*.go", []string{"src/test/a.go", "src/x/test/a.go", "src/x/y/test/a.go"}, []string{"src/test/x/a.go", "test/a.go"}},
		{"**", []string{"a", "a/b/c"}, nil},
		{"a/**/**/b", []string{"a/b", "a/x/b", "a/x/y/b"}, []string{"ab", "a/xb"}},
		{"a**b", []string{"ab", "axxb"}, []string{"a/b", "a/x/b"}},
		{"file?.txt", []string{"file1.txt", "filea.txt"}, []string{"file.txt", "file12.txt", "file/.txt"}},
		{"[abc].go", []string{"a.go", "c.go"}, []string{"d.go", "ab.go"}},
		{"[!abc].go", []string{"d.go", "é.go"}, []string{"a.go", "/.go"}},
		{"[^a-y].go", []string{"z.go", "A.go"}, []string{"a.go", "m.go"}},
		{"[]].go", []string{"].go"}, []string{"a.go"}},
		{"[a-].go", []string{"a.go", "-.go"}, []string{"b.go"}},
		{`\*.go`, []string{"*.go"}, []string{"a.go"}},
		{`a\[1].go`, []string{"a[1].go"}, []string{"a1.go"}},
		{"docs/日本/*.md", []string{"docs/日本/a.md"}, []string{"docs/日/a.md"}},
		{"with space/a b.txt", []string{"with space/a b.txt"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			p := mustPattern(t, tt.pattern)
			for _, s := range tt.yes {
				if !p.Match(s) {
					t.Errorf("Match(%q): got false, want true", s)
				}
			}
			for _, s := range tt.no {
				if p.Match(s) {
					t.Errorf("Match(%q): got true, want false", s)
				}
			}
		})
	}
}

func TestParsePathPatternErrors(t *testing.T) {
	for _, s := range []string{
		"", "/etc/passwd", "a//b", "a/../b", "../a", "a/./b", ".", "a/[bc", "a/[]", `a\`,
		"a/[z-a]", "a\x00b", "a\nb", string([]byte{0xff, 'a'}), strings.Repeat("a", MaxPatternLen+1),
		"[/]",
	} {
		if p, err := ParsePathPattern(s); err == nil || KindOf(err) != Invalid {
			t.Errorf("ParsePathPattern(%q): got %v, %v; want an invalid error", s, p, err)
		}
	}
}

func TestOverlap(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"src/a.go", "src/a.go", true},
		{"src/a.go", "src/b.go", false},
		{"src/*.go", "src/a.go", true},
		{"src/*.go", "src/a/b.go", false},
		{"src/**", "src/a/b.go", true},
		{"src/**", "lib/**", false},
		{"src/**", "**/*.go", true},
		{"src/**/*.go", "src/db/*", true},
		{"src/**/*.go", "docs/*", false},
		{"*.go", "*.md", false},
		{"*.go", "main.*", true},
		{"a/*/c", "*/b/*", true},
		{"a/*/c", "*/b/d", false},
		{"[ab]*", "[bc]*", true},
		{"[a]*", "[bc]*", false},
		{"[!a]x", "ax", false},
		{"[!a]x", "?x", true},
		{"**/test/**", "src/**/x.go", true},
		{"**/test/**", "src/*.go", false},
		{"a?", "a", false},
		{"a*", "a", true},
		{"**", "x", true},
		{"a/**", "a", false},
	}
	for _, tt := range tests {
		t.Run(tt.a+" & "+tt.b, func(t *testing.T) {
			a, b := mustPattern(t, tt.a), mustPattern(t, tt.b)
			for _, dir := range [][2]PathPattern{{a, b}, {b, a}} {
				w, ok := Overlap(dir[0], dir[1])
				if ok != tt.want {
					t.Fatalf("Overlap(%q, %q): got %v (witness %q), want %v", dir[0], dir[1], ok, w, tt.want)
				}
				if ok && !(a.Match(w) && b.Match(w)) {
					t.Errorf("Overlap(%q, %q): witness %q does not match both", dir[0], dir[1], w)
				}
			}
		})
	}
}

// globTokens are the pieces the fuzzer builds patterns from, each with the
// regular expression it means, written independently of the parser.
var globTokens = []struct{ glob, re string }{
	{"a", "a"},
	{"b", "b"},
	{".", `\.`},
	{"/", "/"},
	{"*", "[^/]*"},
	{"?", "[^/]"},
	{"[ab]", "[ab]"},
	{"[!a]", "[^a/]"},
	{"**/", "(?:.*/)?"},
	{"/**", "/.*"},
	{`\*`, `\*`},
	{"é", "é"},
}

// globFrom spells a pattern from fuzz bytes; it returns "" for sequences that are
// not a valid pattern (the parser's validation is tested on its own).
func globFrom(b []byte) (glob, re string) {
	var g, r strings.Builder
	for i, c := range b {
		tok := globTokens[int(c)%len(globTokens)]
		if tok.glob == "/**" && i != len(b)-1 {
			return "", "" // "/**" means "/.*" only at the end
		}
		if strings.HasSuffix(g.String(), "*") && strings.HasPrefix(tok.glob, "*") {
			return "", "" // stars that run together spell another token
		}
		g.WriteString(tok.glob)
		r.WriteString(tok.re)
	}
	glob = g.String()
	// "**" not as a whole segment, empty segments and a leading '/' change
	// the meaning of the pieces; skip them.
	for i, seg := range strings.Split(glob, "/") {
		if seg == "" || (strings.Contains(seg, "**") && seg != "**") || seg == "." || seg == ".." || (i == 0 && seg == "") {
			return "", ""
		}
	}
	return glob, "^" + r.String() + "$"
}

// pathFrom spells a path from fuzz bytes over the characters the tokens use.
func pathFrom(b []byte) string {
	const alphabet = "ab./*xé"
	rs := []rune(alphabet)
	var s strings.Builder
	for _, c := range b {
		s.WriteRune(rs[int(c)%len(rs)])
	}
	return s.String()
}

func FuzzPathPattern(f *testing.F) {
	f.Add([]byte{0, 3, 4}, []byte{4, 3, 0}, []byte{0, 3, 1})
	f.Add([]byte{8, 4}, []byte{0, 9}, []byte{0, 3, 3, 1})
	f.Add([]byte{6, 7, 4}, []byte{5, 10}, []byte{1, 2})
	f.Fuzz(func(t *testing.T, pa, pb, path []byte) {
		if len(pa) > 24 || len(pb) > 24 || len(path) > 24 {
			return
		}
		ga, ra := globFrom(pa)
		gb, rb := globFrom(pb)
		if ga == "" || gb == "" {
			return
		}
		a, err := ParsePathPattern(ga)
		if err != nil {
			t.Fatalf("ParsePathPattern(%q): %v", ga, err)
		}
		b, err := ParsePathPattern(gb)
		if err != nil {
			t.Fatalf("ParsePathPattern(%q): %v", gb, err)
		}
		reA, reB := regexp.MustCompile(ra), regexp.MustCompile(rb)
		s := pathFrom(path)
		if got, want := a.Match(s), reA.MatchString(s); got != want {
			t.Fatalf("%q.Match(%q): got %v, want %v (regexp %s)", ga, s, got, want, ra)
		}
		w, ok := Overlap(a, b)
		w2, ok2 := Overlap(b, a)
		if ok != ok2 {
			t.Fatalf("Overlap(%q, %q) = %v but the reverse = %v", ga, gb, ok, ok2)
		}
		if ok {
			for _, w := range []string{w, w2} {
				if !reA.MatchString(w) || !reB.MatchString(w) {
					t.Fatalf("Overlap(%q, %q): witness %q does not match both (%s, %s)", ga, gb, w, ra, rb)
				}
			}
		}
		// A path both match proves an overlap; Overlap must have found one.
		if reA.MatchString(s) && reB.MatchString(s) && !ok {
			t.Fatalf("Overlap(%q, %q): got false, but %q matches both", ga, gb, s)
		}
	})
}

func TestEscapePath(t *testing.T) {
	for _, s := range []string{"plain/path.go", "a[1].go", `odd\name`, "what?.txt", "star*/x", "é[!a]"} {
		p := mustPattern(t, EscapePath(s))
		lit, ok := p.Literal()
		if !ok || lit != s || !p.Match(s) {
			t.Errorf("EscapePath(%q) = %q: literal %q (%v), want exactly the path", s, EscapePath(s), lit, ok)
		}
	}
}

func BenchmarkOverlap(b *testing.B) {
	x, y := mustPattern(b, "src/**/internal/*_test.go"), mustPattern(b, "src/hub/**")
	for b.Loop() {
		Overlap(x, y)
	}
}
