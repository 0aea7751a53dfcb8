package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTranscriptLetters: of the lines Claude Code 2.1.332 writes to a
// transcript (taken from real sessions), only a peer's user turn and a
// peer's queued command carried the letter to the model: not the notice of
// a held letter that quotes it, not the queue's record, not a tool's output
// that quotes a letter's marker. A line still being written is read by the
// next hook; a read starts where the last one ended.
func TestTranscriptLetters(t *testing.T) {
	const a, b, c, d = "01ARZ3NDEKTSV4RRFFQ69G5FAA", "01ARZ3NDEKTSV4RRFFQ69G5FAB", "01ARZ3NDEKTSV4RRFFQ69G5FAC", "01ARZ3NDEKTSV4RRFFQ69G5FAD"
	m := func(id string) string { return `[Parley bus · letter ` + id + `] 1 new message for bob` }
	lines := []string{
		`{"type":"system","subtype":"informational","content":"Held peer message — from uds:/tmp/cc-socks/9203.sock [verified pid 9203]; preview: «` + m(a) + `» — not delivered to Claude (1 held)."}`,
		`{"type":"queue-operation","operation":"enqueue","content":"` + m(a) + `"}`,
		`{"type":"user","message":{"role":"user","content":"Another Claude session sent a message:\n` + m(b) + `\n\nThis came from another Claude session"},"isMeta":true,"origin":{"kind":"peer","from":"uds:/tmp/cc-socks/1.sock","msg_id":"x"}}`,
		`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"` + m(a) + `"}]}}`,
		`{"type":"attachment","attachment":{"type":"queued_command","prompt":"` + m(c) + `","commandMode":"prompt","origin":{"kind":"peer","from":"uds:/tmp/cc-socks/1.sock"}}}`,
		`{"type":"user","message":{"role":"user","content":"typed by the user: ` + m(a) + `"}}`,
	}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	text := strings.Join(lines, "\n") + "\n"
	os.WriteFile(path, []byte(text+`{"type":"user","message":{"content":"`+m(d)), 0o600) // the last line is being written
	ids, end, err := transcriptLetters(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []string{b, c}) || end != int64(len(text)) {
		t.Errorf("got %v up to %d, want %v up to %d", ids, end, []string{b, c}, len(text))
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`\n","role":"user"},"origin":{"kind":"peer"}}` + "\n")
	f.Close()
	ids, _, err = transcriptLetters(path, end)
	if err != nil || !slices.Equal(ids, []string{d}) {
		t.Errorf("from %d: got %v %v, want %s alone", end, ids, err, d)
	}
}
