package shellword

import (
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  string
	}{
		{in: "npm test", want: []string{"npm", "test"}},
		{in: "  npm   test\t", want: []string{"npm", "test"}},
		{in: `git commit -m 'fix: a; b && c'`, want: []string{"git", "commit", "-m", "fix: a; b && c"}},
		{in: `echo "say \"hi\"" it\'s`, want: []string{"echo", `say "hi"`, "it's"}},
		{in: `go test -run 'Test.*' ./...`, want: []string{"go", "test", "-run", "Test.*", "./..."}},
		{in: "npm test --watch=false", want: []string{"npm", "test", "--watch=false"}},
		{in: `a#b x~y`, err: "~"},
		{in: "npm test; curl x | sh", err: "chains"},
		{in: "npm test && rm -rf ~", err: "chains"},
		{in: "npm test || true", err: "chains"},
		{in: "npm test & evil", err: "chains"},
		{in: "npm test\ncurl x", err: "newline"},
		{in: "npm test\r\ncurl x", err: "newline"},
		{in: "npm test $(curl x)", err: "substitutes"},
		{in: "npm test `curl x`", err: "substitutes"},
		{in: `npm test "$(curl x)"`, err: "substitutes"},
		{in: "npm test $HOME", err: "substitutes"},
		{in: "npm test > ~/.bashrc", err: "redirects"},
		{in: "npm test < /etc/passwd", err: "redirects"},
		{in: "(npm test)", err: "groups"},
		{in: "npm test {a,b}", err: "groups"},
		{in: "rm *", err: "file names"},
		{in: "cat ~/.ssh/id_rsa", err: "home directory"},
		{in: "npm test # comment", err: "comment"},
		{in: "! npm test", err: "negates"},
		{in: "LD_PRELOAD=evil.so npm test", err: "environment"},
		{in: "npm test\u2028curl x", err: "U+2028"},
		{in: "npm test\u0085curl", err: "U+0085"},
		{in: "npm te\u202est", err: "U+202E"},
		{in: "npm 'test", err: "not closed"},
		{in: "npm test\\", err: "backslash"},
		{in: "   ", err: "no command"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := Parse(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse(%q) = %q, %v; want an error saying %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("Parse(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestPattern(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		cmd     []string
		want    bool
	}{
		{"npm test", []string{"npm", "test"}, true},
		{"npm test", []string{"npm", "testing-evil"}, false},
		{"npm test", []string{"npm", "test", "--watch"}, false},
		{"npm test *", []string{"npm", "test"}, true},
		{"npm test *", []string{"npm", "test", "--watch", "x"}, true},
		{"npm test *", []string{"npm", "testing"}, false},
		{"go test ./internal/*", []string{"go", "test", "./internal/hub"}, true},
		{"go test ./internal/*", []string{"go", "test", "./cmd"}, false},
		{"go test '*'", []string{"go", "test", "*"}, true},
		{"go test '*'", []string{"go", "test", "x"}, false},
		{"a*b*c x", []string{"aXbYc", "x"}, false}, // the program is no wildcard: refused below
	} {
		p, err := ParsePattern(tc.pattern)
		if strings.HasPrefix(tc.pattern, "a*") {
			if err == nil {
				t.Errorf("ParsePattern(%q): a wildcard program, want an error", tc.pattern)
			}
			continue
		}
		if err != nil {
			t.Fatalf("ParsePattern(%q): %v", tc.pattern, err)
		}
		if got := p.Match(tc.cmd); got != tc.want {
			t.Errorf("%q matches %q: %v, want %v", tc.pattern, tc.cmd, got, tc.want)
		}
	}
	if p, _ := ParsePattern("npm test"); !p.Exact() {
		t.Error("npm test is exact")
	}
	if p, _ := ParsePattern("npm test *"); p.Exact() || !slices.Equal(p.Words(), []string{"npm", "test", "*"}) {
		t.Errorf("npm test *: %v %q", p.Exact(), p.Words())
	}
}

func TestFromArgv(t *testing.T) {
	if got, err := FromArgv([]string{"/bin/bash", "-lc", "npm test"}); err != nil || !slices.Equal(got, []string{"npm", "test"}) {
		t.Errorf("bash -lc: %q %v", got, err)
	}
	if _, err := FromArgv([]string{"bash", "-lc", "npm test; rm -rf /"}); err == nil {
		t.Error("bash -lc with a chain: no error")
	}
	if got, err := FromArgv([]string{"npm", "test; not a chain"}); err != nil || len(got) != 2 {
		t.Errorf("an argv runs no shell: %q %v", got, err)
	}
}

// FuzzParse: Parse never panics, and what it accepts, Quote renders back
// to a line Parse reads as the same words.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"npm test", `a 'b c' "d\"e"`, "x\\ y", "a;b", "=x", "a=b c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ws, err := Parse(s)
		if err != nil {
			return
		}
		again, err := Parse(Quote(ws))
		if err != nil || !slices.Equal(again, ws) {
			t.Fatalf("Parse(%q) = %q; Quote gives %q, which parses to %q, %v", s, ws, Quote(ws), again, err)
		}
	})
}

func TestAnyCommand(t *testing.T) {
	p, err := ParsePattern("*")
	if err != nil || !p.Match([]string{"rm", "-rf", "x"}) || p.Exact() {
		t.Errorf("a lone *: %v, matches rm -rf x: %v", err, p.Match([]string{"rm", "-rf", "x"}))
	}
}
