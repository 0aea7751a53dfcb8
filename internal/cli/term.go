package cli

import (
	"io"
	"unicode/utf8"
)

// Text that comes from messages, agents and upstream servers is printed to a
// person's terminal, where an escape sequence can retitle the window, clear the
// screen, rewrite what was printed before or, on some terminals, answer back
// into the input. neutralize makes every such character visible instead.

// neutralize returns b with each character a terminal would act on replaced by
// its escape spelled out as text (\u001b for ESC): C0 controls other than tab
// and newline, DEL, C1 controls, and the bidirectional overrides that reorder
// what is shown. A carriage return that ends a line is dropped. Bytes that are
// not UTF-8 become U+FFFD. The escapes are valid inside JSON strings, and the
// replaced characters never occur in JSON outside strings, so JSON stays JSON
// with the same meaning. When nothing needs replacing, b itself is returned.
func neutralize(b []byte) []byte {
	i := 0
	for i < len(b) {
		c := b[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f {
				break
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 || unsafeRune(r) {
			break
		}
		i += n
	}
	if i == len(b) {
		return b
	}
	out := make([]byte, i, len(b)+16)
	copy(out, b[:i])
	for i < len(b) {
		c := b[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '\r' && i+1 < len(b) && b[i+1] == '\n':
				// CRLF line ends print as LF.
			case (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f:
				out = appendEscape(out, rune(c))
			default:
				out = append(out, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			out = utf8.AppendRune(out, utf8.RuneError)
		case unsafeRune(r):
			out = appendEscape(out, r)
		default:
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return out
}

// unsafeRune reports whether r, outside ASCII, is a C1 control or a
// bidirectional control character.
func unsafeRune(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

func appendEscape(out []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	return append(out, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
}

// termWriter neutralizes what is written through it. It holds back a
// trailing incomplete UTF-8 sequence or carriage return until the next write
// (or Flush) shows what follows, so a character split across two writes is
// judged whole.
type termWriter struct {
	w     io.Writer
	carry []byte
}

func (t *termWriter) Write(p []byte) (int, error) {
	data := p
	if len(t.carry) > 0 {
		data = append(t.carry, p...)
		t.carry = nil
	}
	cut := len(data) - heldBack(data)
	if cut < len(data) {
		t.carry = append([]byte(nil), data[cut:]...)
	}
	if _, err := t.w.Write(neutralize(data[:cut])); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what Write held back.
func (t *termWriter) Flush() error {
	if len(t.carry) == 0 {
		return nil
	}
	_, err := t.w.Write(neutralize(t.carry))
	t.carry = nil
	return err
}

// heldBack is how many bytes at the end of b cannot be judged yet.
func heldBack(b []byte) int {
	if len(b) > 0 && b[len(b)-1] == '\r' {
		return 1
	}
	// Look for the start of the last character within the longest encoding.
	for k := 1; k <= utf8.UTFMax && k <= len(b); k++ {
		c := b[len(b)-k]
		if c < utf8.RuneSelf {
			return 0
		}
		if utf8.RuneStart(c) {
			if utf8.FullRune(b[len(b)-k:]) {
				return 0
			}
			return k
		}
	}
	return 0
}
