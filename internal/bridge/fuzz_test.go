package bridge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// FuzzStdinLine feeds arbitrary client input through the line framing and the
// message classifier, and checks that every line either becomes a message the
// bridge forwards verbatim or an error answer that is itself one valid line of
// JSON-RPC.
func FuzzStdinLine(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}` + "\n",
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\r\n",
		`{"jsonrpc":"2.0","id":"a","result":{}}` + "\n\n   \n",
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"x"}]`,
		`{"jsonrpc":"2.0","id":2,"method":`,
		`[]`,
		`42`,
		`{"id":null,"method":"m"}`,
		"{\"id\":\"\\u0061\",\"method\":\"m\"}\n{\"id\":1.0}",
		"\xff\xfe{",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		var out bytes.Buffer
		b := &bridge{out: bufio.NewWriter(&out), log: slog.New(slog.DiscardHandler)}
		lr := newLineReader(bytes.NewReader(input), 1<<10)
		lines := 0
		for {
			l, err := lr.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("next: %v", err)
			}
			lines++
			if lines > len(input)+1 {
				t.Fatal("more lines than input bytes")
			}
			if l.tooLong {
				continue
			}
			if len(l.data) == 0 || bytes.ContainsAny(l.data, "\n") || len(bytes.TrimSpace(l.data)) != len(l.data) {
				t.Fatalf("line %q: want non-empty, trimmed, without newline", l.data)
			}
			m, code, err := parseMessage(l.data)
			if err != nil {
				if code != codeParseError && code != codeInvalidRequest {
					t.Fatalf("line %q: error code %d", l.data, code)
				}
				if code == codeInvalidRequest && !json.Valid(l.data) {
					t.Fatalf("line %q: invalid JSON classified as invalid request", l.data)
				}
				b.writeError(nil, code, err.Error())
				continue
			}
			if !json.Valid(m.raw) {
				t.Fatalf("line %q: accepted but not valid JSON", l.data)
			}
			if id := m.id; id != nil {
				if !isID(id) || idKey(id) == "" {
					t.Fatalf("line %q: bad id %q", l.data, id)
				}
				b.writeError(id, codeInternalError, "x")
			}
		}
		for _, ln := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
			if ln != "" && !json.Valid([]byte(ln)) {
				t.Fatalf("wrote invalid JSON line %q", ln)
			}
		}
	})
}

func TestIDKey(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{`1`, `1.0`},
		{`"a"`, `"\u0061"`},
		{`-3`, `-3e0`},
	} {
		if idKey(json.RawMessage(tc.a)) != idKey(json.RawMessage(tc.b)) {
			t.Errorf("idKey(%s) != idKey(%s)", tc.a, tc.b)
		}
	}
	if idKey(json.RawMessage(`1`)) == idKey(json.RawMessage(`"1"`)) {
		t.Error(`idKey(1) == idKey("1")`)
	}
}

func TestLineReader(t *testing.T) {
	big := strings.Repeat("y", 17<<20) // past the 16 MiB clients may send
	in := "a\n\n  \r\n" + big + "\r\n" + strings.Repeat("z", 100) + "\nb\nlast"
	lr := newLineReader(strings.NewReader(in), 64<<20)
	var got []string
	for {
		l, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(l.data))
	}
	if len(got) != 5 || got[0] != "a" || got[1] != big || got[3] != "b" || got[4] != "last" {
		t.Errorf("lines: got %d lines (first %q), want a, the 17 MiB line, z..., b, last", len(got), got[0])
	}

	lr = newLineReader(strings.NewReader(strings.Repeat("x", 300)+"\nok\n"), 100)
	if l, err := lr.next(); err != nil || !l.tooLong {
		t.Errorf("over-long line: got %+v, %v; want tooLong", l, err)
	}
	if l, err := lr.next(); err != nil || string(l.data) != "ok" {
		t.Errorf("line after an over-long one: got %q, %v; want ok", l.data, err)
	}
}
