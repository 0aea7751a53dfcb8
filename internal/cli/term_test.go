package cli

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestNeutralize(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"plain", "hello, wörld ── 🎉\tok\n", "hello, wörld ── 🎉\tok\n"},
		{"window title", "\x1b]0;pwned\x07rest", `\u001b]0;pwned\u0007rest`},
		{"clear screen", "\x1b[2J\x1b[H", `\u001b[2J\u001b[H`},
		{"CRLF", "a\r\nb\r\n", "a\nb\n"},
		{"lone CR overwrites the line", "ok\rFAKE", `ok\u000dFAKE`},
		{"DEL and NUL", "a\x7fb\x00", `a\u007fb\u0000`},
		{"C1 CSI", "a\u009b2Jb", `a\u009b2Jb`},
		{"bidi override", "abc\u202edcba", `abc\u202edcba`},
		{"invalid UTF-8", "a\x9b\xffb", "a\uFFFD\uFFFDb"},
		{"CR at the end", "a\r", `a\u000d`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(neutralize([]byte(tt.in))); got != tt.want {
				t.Errorf("neutralize(%q): got %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestTermWriterSplits: a character or a CRLF split across writes is judged
// whole; nothing is lost or doubled.
func TestTermWriterSplits(t *testing.T) {
	in := []byte("é\r\n\x1b[31mrouge\u202e🎉\r")
	for cut := 0; cut <= len(in); cut++ {
		for cut2 := cut; cut2 <= len(in); cut2++ {
			var b bytes.Buffer
			tw := &termWriter{w: &b}
			tw.Write(in[:cut])
			tw.Write(in[cut:cut2])
			tw.Write(in[cut2:])
			tw.Flush()
			if want := string(neutralize(in)); b.String() != want {
				t.Fatalf("cut at %d,%d: got %q, want %q", cut, cut2, b.String(), want)
			}
		}
	}
}

func FuzzNeutralize(f *testing.F) {
	for _, s := range []string{"plain", "\x1b]0;x\x07", "a\r\nb\rc", "\u009b\u202e", "\xff\xc2", "é🎉"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out := neutralize(in)
		if !utf8.Valid(out) {
			t.Fatalf("not UTF-8: %q", out)
		}
		for _, r := range string(out) {
			if (r < 0x20 && r != '\t' && r != '\n') || r == 0x7f || unsafeRune(r) {
				t.Fatalf("neutralize(%q) = %q keeps %U", in, out, r)
			}
		}
		if again := neutralize(out); !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q then %q", out, again)
		}
		// JSON as the CLI prints it stays JSON with the same meaning.
		j, _ := json.Marshal(map[string]string{"content": string(in)})
		var want, got any
		json.Unmarshal(j, &want)
		if err := json.Unmarshal(neutralize(j), &got); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("JSON %s became %s: %v", j, neutralize(j), err)
		}
		// Through the writer, in two pieces, the same as in one.
		var b bytes.Buffer
		tw := &termWriter{w: &b}
		tw.Write(in[:len(in)/2])
		tw.Write(in[len(in)/2:])
		tw.Flush()
		if b.String() != string(out) {
			t.Fatalf("writer: got %q, want %q", b.String(), out)
		}
		if !strings.ContainsAny(string(in), "\x1b\r\x7f") && utf8.Valid(in) && !bytes.ContainsFunc(in, func(r rune) bool { return r < 0x20 && r != '\t' && r != '\n' || unsafeRune(r) }) && !bytes.Equal(out, in) {
			t.Fatalf("changed harmless text %q to %q", in, out)
		}
	})
}
