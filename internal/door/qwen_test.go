package door

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeQwen is a Qwen Code session's inbox as the protocol describes it:
// a record naming a socket that reads one connection's lines.
func fakeQwen(t *testing.T) (record string, lines chan []string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "qw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "in.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	lines = make(chan []string, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			var got []string
			sc := bufio.NewScanner(c)
			for sc.Scan() {
				got = append(got, sc.Text())
			}
			c.Close()
			lines <- got
		}
	}()
	pid := 4242
	record = filepath.Join(dir, "sessions", strconv.Itoa(pid)+".json")
	os.MkdirAll(filepath.Dir(record), 0o700)
	b, _ := json.Marshal(map[string]any{"schemaVersion": 1, "pid": pid, "sessionId": "sess-1", "ipcPath": sock, "ipcToken": "peer-token"})
	if err := os.WriteFile(record, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return record, lines
}

// TestQwenLetterOnTheWire: a letter presents the record's peer token,
// addresses the record's session, names the receipts inbox and its
// token, and claims no review class (fromMode): never a mode, never the
// session's child token.
func TestQwenLetterOnTheWire(t *testing.T) {
	record, lines := fakeQwen(t)
	t.Setenv(EnvQwenToken, "child-token")
	l, err := ListenQwen("")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sent, err := (&Qwen{Record: record}).Write(context.Background(), QwenLetter{Text: "hello", Reply: l})
	if err != nil {
		t.Fatal(err)
	}
	got := <-lines
	if len(got) != 2 || got[0] != `{"msgV":1,"type":"auth","token":"peer-token"}` {
		t.Fatalf("lines: %q, want the auth line with the record's token, then the frame", got)
	}
	var f map[string]any
	json.Unmarshal([]byte(got[1]), &f)
	if f["type"] != "user" || f["toSessionId"] != "sess-1" || f["msgId"] != sent.MsgID || f["from"] != l.Path() || f["replyToken"] != l.token {
		t.Errorf("frame: %v", f)
	}
	if _, ok := f["fromMode"]; ok || strings.Contains(strings.Join(got, "\n"), "child-token") {
		t.Errorf("the letter claims a review class or the child token: %q", got)
	}

	// Receipts: only on the inbox's own token; a dropped burst settles
	// every id it names.
	say := func(token string, frames ...map[string]any) {
		t.Helper()
		var b strings.Builder
		fmt.Fprintf(&b, `{"msgV":1,"type":"auth","token":%q}`+"\n", token)
		for _, f := range frames {
			j, _ := json.Marshal(f)
			b.Write(append(j, '\n'))
		}
		c, err := net.Dial("unix", l.Path())
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte(b.String()))
		c.Close()
	}
	say("wrong", map[string]any{"msgV": 1, "type": "control", "action": "delivery_status", "status": "delivered", "origMsgId": sent.MsgID})
	say(l.token, map[string]any{"msgV": 1, "type": "control", "action": "delivery_status", "status": "held", "origMsgId": sent.MsgID, "reason": "review"})
	select {
	case r := <-sent.Receipt.C:
		if r.Status != ReceiptHeld || r.Reason != "review" {
			t.Errorf("receipt: %+v, want held (the wrong token's delivered dropped)", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no receipt")
	}
	other, _ := l.expect("other-id")
	say(l.token, map[string]any{"msgV": 1, "type": "control", "action": "delivery_status", "status": "dropped", "origMsgId": "x",
		"dropReason": "rate-limited", "droppedMsgIds": []string{"other-id"}, "reason": "too fast"})
	select {
	case r := <-other.C:
		if r.Status != ReceiptDropped || !strings.HasPrefix(r.Reason, "rate-limited") {
			t.Errorf("receipt: %+v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no receipt for a dropped id of a burst")
	}
}

// TestQwenRecordGone: no record, or one that names no inbox, is a gone
// session; a record whose pid is not its file's is refused.
func TestQwenRecordGone(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadQwenRecord(filepath.Join(dir, "1.json")); !IsGone(err) {
		t.Errorf("missing record: %v, want gone", err)
	}
	os.WriteFile(filepath.Join(dir, "2.json"), []byte(`{"schemaVersion":1,"pid":2,"sessionId":"s"}`), 0o600)
	if _, err := ReadQwenRecord(filepath.Join(dir, "2.json")); !IsGone(err) {
		t.Errorf("record without an inbox: %v, want gone", err)
	}
	os.WriteFile(filepath.Join(dir, "3.json"), []byte(`{"schemaVersion":1,"pid":4,"sessionId":"s","ipcPath":"/x"}`), 0o600)
	if _, err := ReadQwenRecord(filepath.Join(dir, "3.json")); !IsRefused(err) {
		t.Errorf("record of another pid: %v, want refused", err)
	}
}
