package config

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// EditUpstreams applies edit to the [[upstream]] tables of config.toml's
// text and returns the new text. The file is the user's: only the tables
// that changed are rewritten, so comments, order and layout elsewhere stay as
// they were; a table that only changes enabled keeps its comments too. An
// upstream's comment lines directly above its table go with it when it is
// removed. The result is parsed back and must equal the edited settings, or
// nothing is returned: a file that this cannot edit safely (say, upstreams
// written as an inline array) is an error, not a rewrite.
func EditUpstreams(text []byte, name string, edit func(*Config) error) ([]byte, error) {
	old, err := Parse(text, name)
	if err != nil {
		return nil, err
	}
	want, _ := Parse(text, name) // a deep copy to edit
	if err := edit(want); err != nil {
		return nil, err
	}
	if err := Check(want); err != nil {
		return nil, err
	}
	lines := strings.SplitAfter(string(text), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	blocks, err := upstreamBlocks(lines)
	if err != nil || len(blocks) != len(old.Upstreams) {
		return nil, fmt.Errorf("%s: cannot find each [[upstream]] table in the text: edit it by hand", name)
	}
	wantByName := map[string]*Upstream{}
	for i := range want.Upstreams {
		wantByName[want.Upstreams[i].Name] = &want.Upstreams[i]
	}
	var out []string
	at := 0 // lines before at are done
	for i, b := range blocks {
		u := &old.Upstreams[i]
		if b.name != u.Name {
			return nil, fmt.Errorf("%s: cannot match the [[upstream]] tables to the text: edit it by hand", name)
		}
		w := wantByName[u.Name]
		delete(wantByName, u.Name)
		switch {
		case w == nil: // removed, with the comments that introduce it
			out = append(out, lines[at:b.lead]...)
			at = b.end
			// No double blank line where it was, nor one at the end.
			switch {
			case at < len(lines) && blank(lines[at]) && (len(out) == 0 || blank(out[len(out)-1])):
				at++
			case at == len(lines) && len(out) > 0 && blank(out[len(out)-1]):
				out = out[:len(out)-1]
			}
		case same(u, w):
		case onlyEnabled(u, w):
			out = append(out, lines[at:b.head+1]...)
			out = append(out, setEnabled(lines[b.head+1:b.main], w.Enabled)...)
			at = b.main
		default:
			out = append(out, lines[at:b.head]...)
			r, err := render(w)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
			at = b.end
		}
	}
	out = append(out, lines[at:]...)
	for _, u := range want.Upstreams { // added: at the end, in the edit's order
		if wantByName[u.Name] == nil {
			continue
		}
		r, err := render(&u)
		if err != nil {
			return nil, err
		}
		if n := len(out); n > 0 && !strings.HasSuffix(out[n-1], "\n") {
			out = append(out, "\n")
		}
		if n := len(out); n > 0 && !blank(out[n-1]) {
			out = append(out, "\n")
		}
		out = append(out, r)
	}
	result := []byte(strings.Join(out, ""))
	got, err := Parse(result, name)
	if err != nil {
		return nil, fmt.Errorf("%s: the edit would not parse (%v): edit it by hand", name, err)
	}
	a, err1 := toml.Marshal(got)
	b, err2 := toml.Marshal(want)
	if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
		return nil, fmt.Errorf("%s: the edit would change more than the upstreams: edit it by hand", name)
	}
	return result, nil
}

// block is where one [[upstream]] table is in the lines of the file.
type block struct {
	name string
	lead int // the first of the comment lines directly above the header
	head int // the [[upstream]] line
	main int // the end of its own keys: its first sub-table, or end
	end  int // after its last line that is not blank or a comment
}

var (
	upstreamHeader = regexp.MustCompile(`^\s*\[\[\s*upstream\s*\]\]\s*(#.*)?$`)
	upstreamSub    = regexp.MustCompile(`^\s*\[\[?\s*upstream\s*\.`)
	anyHeader      = regexp.MustCompile(`^\s*\[`)
	enabledKey     = regexp.MustCompile(`^(\s*enabled\s*=\s*)(true|false)(.*)$`)
)

func blank(l string) bool { return strings.TrimSpace(l) == "" }

func comment(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "#") }

// upstreamBlocks finds the [[upstream]] tables, with their sub-tables, and
// names each by decoding its text alone.
func upstreamBlocks(lines []string) ([]block, error) {
	var bs []block
	for i := 0; i < len(lines); i++ {
		if !upstreamHeader.MatchString(strings.TrimRight(lines[i], "\r\n")) {
			continue
		}
		b := block{head: i, lead: i, main: -1}
		for b.lead > 0 && comment(lines[b.lead-1]) {
			b.lead--
		}
		j := i + 1
		for ; j < len(lines); j++ {
			l := strings.TrimRight(lines[j], "\r\n")
			if upstreamSub.MatchString(l) {
				if b.main < 0 {
					b.main = j
				}
				continue
			}
			if anyHeader.MatchString(l) {
				break
			}
		}
		b.end = j
		for b.end > i+1 && (blank(lines[b.end-1]) || comment(lines[b.end-1])) {
			b.end--
		}
		if b.main < 0 || b.main > b.end {
			b.main = b.end
		}
		var one struct {
			Upstream []Upstream `toml:"upstream"`
		}
		if err := toml.Unmarshal([]byte(strings.Join(lines[i:b.end], "")), &one); err != nil || len(one.Upstream) != 1 {
			return nil, fmt.Errorf("table at line %d: cannot read it alone", i+1)
		}
		b.name = one.Upstream[0].Name
		bs = append(bs, b)
		i = j - 1
	}
	return bs, nil
}

func render(u *Upstream) (string, error) {
	b, err := toml.Marshal(struct {
		Upstream []Upstream `toml:"upstream"`
	}{[]Upstream{*u}})
	if err != nil {
		return "", fmt.Errorf("encode upstream %s: %w", u.Name, err)
	}
	return strings.TrimRight(string(b), "\n") + "\n", nil
}

func same(a, b *Upstream) bool {
	x, err1 := render(a)
	y, err2 := render(b)
	return err1 == nil && err2 == nil && x == y
}

func onlyEnabled(a, b *Upstream) bool {
	c := *b
	c.Enabled = a.Enabled
	return same(a, &c)
}

// setEnabled sets enabled among a table's own key lines: on is nil for the
// default (the key goes), else its value. A comment after the value stays.
func setEnabled(keys []string, on *bool) []string {
	out := make([]string, 0, len(keys)+1)
	found := false
	for _, l := range keys {
		m := enabledKey.FindStringSubmatch(strings.TrimRight(l, "\r\n"))
		if m == nil {
			out = append(out, l)
			continue
		}
		found = true
		if on != nil {
			out = append(out, fmt.Sprintf("%s%t%s\n", m[1], *on, m[3]))
		}
	}
	if !found && on != nil {
		out = append([]string{fmt.Sprintf("enabled = %t\n", *on)}, out...)
	}
	return out
}
