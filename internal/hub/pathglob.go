package hub

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// A PathPattern names files of a repository by their paths relative to its top,
// '/' between segments:
//
//   - any run of characters within one segment
//     ?      one character of a segment
//     [a-z]  one character of the class ([!...] or [^...] negates it)
//     **     as a whole segment: any number of segments, none included
//     dir/   everything under dir (the same as dir/**)
//     \c     the character c itself
//
// A pattern without any of these is a plain path. Two patterns overlap when some
// path matches both; Overlap decides that exactly, so that a reservation of
// "src/**/*.go" conflicts with one of "src/db/*" and not with one of "docs/*".
type PathPattern struct {
	src     string
	literal bool // no wildcard: the pattern is exactly one path, lit
	lit     string
	nfa     nfa
	// prefix and suffix are literal text that every match starts and ends
	// with: two patterns whose prefixes (or suffixes) disagree cannot
	// overlap, which settles most pairs without the automata.
	prefix, suffix string
}

// Limits of a pattern.
const (
	MaxPatternLen = 512 // bytes
)

// ParsePathPattern validates s and compiles it. It accepts a leading "./" and
// rejects absolute paths, "." and ".." segments, empty segments, control
// characters and malformed classes, each with an error that says what to write.
func ParsePathPattern(s string) (PathPattern, error) {
	src := s
	for strings.HasPrefix(s, "./") {
		s = s[2:]
	}
	switch {
	case s == "":
		return PathPattern{}, Errorf("", Invalid, "path pattern must not be empty")
	case len(s) > MaxPatternLen:
		return PathPattern{}, Errorf("", Invalid, "path pattern is too long: at most %d bytes", MaxPatternLen)
	case !utf8.ValidString(s):
		return PathPattern{}, Errorf("", Invalid, "path pattern %q is not UTF-8", src)
	case strings.HasPrefix(s, "/"):
		return PathPattern{}, Errorf("", Invalid, "path pattern %q is absolute: give it relative to the top of the repository", src)
	case strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) >= 0:
		return PathPattern{}, Errorf("", Invalid, "path pattern %q has control characters", src)
	}
	if strings.HasSuffix(s, "/") {
		s += "**"
	}
	segs := strings.Split(s, "/")
	for _, seg := range segs {
		switch seg {
		case "":
			return PathPattern{}, Errorf("", Invalid, "path pattern %q has an empty segment (\"//\")", src)
		case ".", "..":
			return PathPattern{}, Errorf("", Invalid, "path pattern %q has a %q segment: give the path from the top of the repository", src, seg)
		}
	}
	var b nfaBuilder
	b.init()
	literal := true
	var lit strings.Builder
	for i, seg := range segs {
		last := i == len(segs)-1
		if seg == "**" {
			literal = false
			if last {
				b.loop(anyRune)
			} else {
				b.dirs()
			}
			continue // "**/" consumes its own separator
		}
		isLit, err := b.segment(seg)
		if err != nil {
			return PathPattern{}, Errorf("", Invalid, "path pattern %q: %v", src, err)
		}
		if !isLit {
			literal = false
		} else if literal {
			lit.WriteString(unescape(seg))
		}
		if !last {
			b.char(single('/'))
			lit.WriteByte('/')
		}
	}
	p := PathPattern{src: s, literal: literal, nfa: b.finish()}
	if literal {
		p.lit = lit.String()
		p.prefix, p.suffix = p.lit, p.lit
	} else {
		p.prefix, p.suffix = literalEnds(s)
	}
	return p, nil
}

// String returns the pattern as written (without a leading "./"; a trailing "/"
// shows as "/**").
func (p PathPattern) String() string { return p.src }

// Literal reports whether the pattern is one plain path, and which.
func (p PathPattern) Literal() (string, bool) { return p.lit, p.literal }

// Match reports whether path matches the pattern.
func (p PathPattern) Match(path string) bool {
	if p.literal {
		return path == p.lit
	}
	return p.nfa.match(path)
}

// Overlap reports whether some path matches both patterns, and returns one such
// path as a witness. It is symmetric, and exact: it intersects the two
// patterns' automata instead of guessing from prefixes.
func Overlap(a, b PathPattern) (witness string, ok bool) {
	if !strings.HasPrefix(a.prefix, b.prefix) && !strings.HasPrefix(b.prefix, a.prefix) ||
		!strings.HasSuffix(a.suffix, b.suffix) && !strings.HasSuffix(b.suffix, a.suffix) {
		return "", false
	}
	switch {
	case a.literal && b.literal:
		return a.lit, a.lit == b.lit
	case a.literal:
		return a.lit, b.Match(a.lit)
	case b.literal:
		return b.lit, a.Match(b.lit)
	}
	return a.nfa.intersect(&b.nfa)
}

// literalEnds returns the plain text before a pattern's first wildcard and
// after its last one. Text with escapes is cut short at the escape, which
// keeps the ends sound (a shorter prefix rules out less, never too much).
func literalEnds(s string) (prefix, suffix string) {
	const special = `*?[\`
	i := strings.IndexAny(s, special)
	if i < 0 {
		return s, s
	}
	j := strings.LastIndexAny(s, special)
	suffix = s[j+1:]
	if s[j] == '[' || (s[j] == '\\' && j+1 < len(s)) {
		suffix = "" // a class or an escape: its end is not found this simply
		if k := strings.LastIndexByte(s, ']'); s[j] == '[' && k > j {
			suffix = s[k+1:]
		}
	}
	return s[:i], suffix
}

func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ---- rune sets ----

// A runeSet is a sorted list of disjoint, non-adjacent closed ranges.
type runeSet []runeRange

type runeRange struct{ lo, hi rune }

var (
	anyRune  = runeSet{{0, unicode.MaxRune}}
	notSlash = runeSet{{0, '/' - 1}, {'/' + 1, unicode.MaxRune}}
)

func single(r rune) runeSet { return runeSet{{r, r}} }

func (s runeSet) has(r rune) bool {
	for _, rg := range s {
		if r < rg.lo {
			return false
		}
		if r <= rg.hi {
			return true
		}
	}
	return false
}

// intersect returns the runes in both sets.
func (s runeSet) intersect(t runeSet) runeSet {
	var out runeSet
	for i, j := 0, 0; i < len(s) && j < len(t); {
		lo, hi := max(s[i].lo, t[j].lo), min(s[i].hi, t[j].hi)
		if lo <= hi {
			out = append(out, runeRange{lo, hi})
		}
		if s[i].hi < t[j].hi {
			i++
		} else {
			j++
		}
	}
	return out
}

// normalize sorts and merges ranges.
func normalize(rs []runeRange) runeSet {
	for i := 1; i < len(rs); i++ { // insertion sort: classes are short
		for j := i; j > 0 && rs[j].lo < rs[j-1].lo; j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
	var out runeSet
	for _, r := range rs {
		if n := len(out); n > 0 && r.lo <= out[n-1].hi+1 {
			out[n-1].hi = max(out[n-1].hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

// complement returns every rune not in s.
func (s runeSet) complement() runeSet {
	var out runeSet
	next := rune(0)
	for _, r := range s {
		if r.lo > next {
			out = append(out, runeRange{next, r.lo - 1})
		}
		next = r.hi + 1
	}
	if next <= unicode.MaxRune {
		out = append(out, runeRange{next, unicode.MaxRune})
	}
	return out
}

// pick returns a readable member of a non-empty set, for witnesses.
func (s runeSet) pick() rune {
	for _, r := range []rune{'a', 'x', '0', '_'} {
		if s.has(r) {
			return r
		}
	}
	for _, rg := range s {
		if rg.hi >= '!' && rg.lo <= '~' {
			return max(rg.lo, '!')
		}
	}
	for _, rg := range s {
		if rg.hi >= 0xA1 {
			return max(rg.lo, 0xA1)
		}
	}
	return s[0].lo
}

// ---- automata ----

// An nfa has states 0..n-1, starts in 0 and accepts in n-1.
type nfa struct {
	eps   [][]int32
	edges [][]nfaEdge
}

type nfaEdge struct {
	set runeSet
	to  int32
}

type nfaBuilder struct {
	n   nfa
	cur int32
}

func (b *nfaBuilder) init() { b.cur = b.state() }

func (b *nfaBuilder) state() int32 {
	b.n.eps = append(b.n.eps, nil)
	b.n.edges = append(b.n.edges, nil)
	return int32(len(b.n.eps) - 1)
}

// char reads one rune of set.
func (b *nfaBuilder) char(set runeSet) {
	t := b.state()
	b.n.edges[b.cur] = append(b.n.edges[b.cur], nfaEdge{set, t})
	b.cur = t
}

// loop reads any number of runes of set.
func (b *nfaBuilder) loop(set runeSet) {
	t := b.state()
	b.n.edges[b.cur] = append(b.n.edges[b.cur], nfaEdge{set, b.cur})
	b.n.eps[b.cur] = append(b.n.eps[b.cur], t)
	b.cur = t
}

// dirs reads "**/": nothing, or any string that ends in '/' (which is the same
// as any number of segments, each with its slash).
func (b *nfaBuilder) dirs() {
	m, t := b.state(), b.state()
	b.n.eps[b.cur] = append(b.n.eps[b.cur], m, t)
	b.n.edges[m] = append(b.n.edges[m], nfaEdge{anyRune, m}, nfaEdge{single('/'), t})
	b.cur = t
}

func (b *nfaBuilder) finish() nfa { return b.n }

// segment compiles one segment (no '/') and reports whether it was plain text.
func (b *nfaBuilder) segment(seg string) (literal bool, err error) {
	literal = true
	star := false // collapse "**" inside a segment, and "*" runs, to one loop
	for i := 0; i < len(seg); {
		r, size := utf8.DecodeRuneInString(seg[i:])
		switch r {
		case '*':
			literal = false
			if !star {
				b.loop(notSlash)
			}
			star = true
			i += size
			continue
		case '?':
			literal = false
			b.char(notSlash)
		case '[':
			set, n, err := parseClass(seg[i:])
			if err != nil {
				return false, err
			}
			literal = false
			b.char(set)
			size = n
		case '\\':
			if i+size >= len(seg) {
				return false, errorString("a trailing '\\' escapes nothing")
			}
			r, n := utf8.DecodeRuneInString(seg[i+size:])
			b.char(single(r))
			size += n
		default:
			b.char(single(r))
		}
		star = false
		i += size
	}
	return literal, nil
}

// parseClass reads "[...]" at the start of s; it never contains '/'.
func parseClass(s string) (runeSet, int, error) {
	i := 1
	neg := false
	if i < len(s) && (s[i] == '!' || s[i] == '^') {
		neg = true
		i++
	}
	var rs []runeRange
	first := true
	for {
		if i >= len(s) {
			return nil, 0, errorString("a '[' has no closing ']'")
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == ']' && !first {
			i += n
			break
		}
		first = false
		if r == '\\' {
			if i+n >= len(s) {
				return nil, 0, errorString("a '[' has no closing ']'")
			}
			i += n
			r, n = utf8.DecodeRuneInString(s[i:])
		}
		i += n
		lo, hi := r, r
		if i+1 < len(s) && s[i] == '-' && s[i+1] != ']' {
			h, m := utf8.DecodeRuneInString(s[i+1:])
			if h == '\\' && i+1+m < len(s) {
				i += m
				h, m = utf8.DecodeRuneInString(s[i+1:])
			}
			if h < lo {
				return nil, 0, errorString("a class range runs backwards")
			}
			hi = h
			i += 1 + m
		}
		rs = append(rs, runeRange{lo, hi})
	}
	set := normalize(rs)
	if neg {
		set = set.complement()
	}
	set = set.intersect(notSlash)
	if len(set) == 0 {
		return nil, 0, errorString("a class matches no character")
	}
	return set, i, nil
}

type errorString string

func (e errorString) Error() string { return string(e) }

// closure adds to set every state reachable from its members by ε-moves.
func (n *nfa) closure(set []bool, stack []int32) []int32 {
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, t := range n.eps[s] {
			if !set[t] {
				set[t] = true
				stack = append(stack, t)
			}
		}
	}
	return stack
}

func (n *nfa) match(s string) bool {
	k := len(n.eps)
	cur, next := make([]bool, k), make([]bool, k)
	cur[0] = true
	stack := n.closure(cur, []int32{0})
	for _, r := range s {
		clear(next)
		any := false
		for st := range k {
			if !cur[st] {
				continue
			}
			for _, e := range n.edges[st] {
				if !next[e.to] && e.set.has(r) {
					next[e.to] = true
					stack = append(stack, e.to)
					any = true
				}
			}
		}
		if !any {
			return false
		}
		stack = n.closure(next, stack)
		cur, next = next, cur
	}
	return cur[k-1]
}

// intersect searches the product of two automata breadth first for a path
// from both starts to both accepts, and spells out the path it finds.
func (n *nfa) intersect(m *nfa) (string, bool) {
	type pair struct{ a, b int32 }
	type step struct {
		from pair
		r    rune // -1: an ε-move
	}
	start := pair{0, 0}
	goal := pair{int32(len(n.eps) - 1), int32(len(m.eps) - 1)}
	seen := map[pair]step{start: {from: start, r: -1}}
	queue := []pair{start}
	visit := func(p pair, from pair, r rune) {
		if _, ok := seen[p]; !ok {
			seen[p] = step{from, r}
			queue = append(queue, p)
		}
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == goal {
			var rs []rune
			for p != start {
				st := seen[p]
				if st.r >= 0 {
					rs = append(rs, st.r)
				}
				p = st.from
			}
			for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
				rs[i], rs[j] = rs[j], rs[i]
			}
			return string(rs), true
		}
		for _, t := range n.eps[p.a] {
			visit(pair{t, p.b}, p, -1)
		}
		for _, t := range m.eps[p.b] {
			visit(pair{p.a, t}, p, -1)
		}
		for _, ea := range n.edges[p.a] {
			for _, eb := range m.edges[p.b] {
				if both := ea.set.intersect(eb.set); len(both) > 0 {
					visit(pair{ea.to, eb.to}, p, both.pick())
				}
			}
		}
	}
	return "", false
}

// EscapePath returns the pattern that matches exactly path, escaping the
// characters a pattern gives a meaning: a file named "a[1].go" is checked as
// itself, not as a class.
func EscapePath(path string) string {
	if !strings.ContainsAny(path, `*?[\`) {
		return path
	}
	var b strings.Builder
	for _, r := range path {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
