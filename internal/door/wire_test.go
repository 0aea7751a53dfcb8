package door_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/door"
)

// TestClaudeWire: what a letter says on the wire, read by a socket that
// stands where a Claude Code session's inbox is: the auth line, the letter
// and the idle subscription, with no key beyond these (no permission mode,
// no session id: a letter asserts nothing of its sender but the address
// this process listens on, in the session's own socket directory); and the
// receipts that come back there, as Claude Code 2.1.332 words them, reach
// the letter's stream and no other.
func TestClaudeWire(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Claude Code asks for its token on Windows: the auth line goes there")
	}
	dir, err := os.MkdirTemp("/tmp", "cw")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "777.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	lines := make(chan map[string]any, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			sc := bufio.NewScanner(c)
			for sc.Scan() {
				var m map[string]any
				json.Unmarshal(sc.Bytes(), &m)
				lines <- m
			}
			c.Close()
		}
	}()
	l, err := door.Listen(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if want := "uds:" + filepath.Join(dir, strconv.Itoa(os.Getpid())+".sock"); l.Addr() != want {
		t.Errorf("reply address: got %s, want %s", l.Addr(), want)
	}
	ctx := context.Background()
	c := &door.Claude{Socket: sock, Token: "tok"}
	rc, err := c.Write(ctx, door.ClaudeLetter{Text: "hello", Reply: l})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	other, err := c.Write(ctx, door.ClaudeLetter{Text: "another", Reply: l})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	// No auth line outside Windows: the token would present the letter as
	// one of the session's own children's.
	got := make([]map[string]any, 4)
	for i := range got {
		select {
		case got[i] = <-lines:
		case <-time.After(10 * time.Second):
			t.Fatalf("line %d did not come", i)
		}
	}
	allowed := map[string][]string{"auth": {"type", "token"}, "user": {"type", "priority", "message", "from", "msg_id"},
		"control": {"type", "action", "from", "msg_id"}}
	for _, m := range got {
		typ, _ := m["type"].(string)
		for k := range m {
			if !slices.Contains(allowed[typ], k) {
				t.Errorf("a %s line carries %q: %v", typ, k, m)
			}
		}
		if from, ok := m["from"]; ok && from != l.Addr() {
			t.Errorf("from %v, want %s", from, l.Addr())
		}
	}
	letter, sub := got[0], got[1]
	if letter["type"] != "user" || sub["action"] != "notify_when_idle" || letter["msg_id"] == sub["msg_id"] {
		t.Fatalf("lines: %v", got[:2])
	}
	for _, m := range got {
		if m["type"] == "auth" {
			t.Errorf("an auth line outside Windows: %v", m)
		}
	}
	if m, _ := letter["message"].(map[string]any); m["content"] != "hello" || m["role"] != "user" {
		t.Errorf("the letter: %v", letter)
	}
	answer := func(v map[string]any) {
		t.Helper()
		conn, err := net.Dial("unix", strings.TrimPrefix(l.Addr(), "uds:"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(v)
		conn.Write(append(b, '\n'))
		conn.Close()
	}
	status := func(s string, extra map[string]any) map[string]any {
		v := map[string]any{"type": "control", "action": "peer_message_status", "status": s, "reason": "words of " + s,
			"from": "uds:" + sock, "orig_msg_id": letter["msg_id"], "msgV": 1, "msg_id": "x"}
		for k, x := range extra {
			v[k] = x
		}
		return v
	}
	// One at a time: each comes on a connection of its own.
	for i, c := range []struct {
		say  map[string]any
		want door.Receipt
	}{
		{status("held", nil), door.Receipt{Status: door.ReceiptHeld, Reason: "words of held"}},
		{status("smoke", nil), door.Receipt{}}, // unknown: dropped
		{status("expired", map[string]any{"status_detail": "refused"}), door.Receipt{Status: door.ReceiptRefused, Reason: "words of expired"}},
		{status("dropped", map[string]any{"drop_reason": "queue-full"}), door.Receipt{Status: door.ReceiptDropped, Reason: "queue-full"}},
		{map[string]any{"type": "control", "action": "peer_idle_notice", "orig_msg_id": sub["msg_id"], "state": "idle",
			"finished_at": 1796175249929, "from": "uds:" + sock}, door.Receipt{Status: door.ReceiptIdle, Reason: "idle", At: time.UnixMilli(1796175249929).UTC()}},
	} {
		answer(c.say)
		if c.want.Status == "" {
			continue // the next one shows it was skipped
		}
		select {
		case r := <-rc.C:
			if r.Status != c.want.Status || r.Reason != c.want.Reason || !c.want.At.IsZero() && !r.At.Equal(c.want.At) {
				t.Errorf("receipt %d: got %+v, want %+v", i, r, c.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("receipt %d (%s) did not come", i, c.want.Status)
		}
	}
	select {
	case r := <-other.C:
		t.Errorf("another letter's stream got %+v", r)
	default:
	}
	if l.Pending() != 2 {
		t.Errorf("pending: got %d, want 2 (both letters await their words)", l.Pending())
	}
	rc.Close()
	if _, ok := <-rc.C; ok {
		t.Errorf("a closed stream still delivers")
	}
}
