package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// TestNoticeOfOverdueAck: when a message's ack deadline passes, the hub tells
// its sender, and the daemon pushes that to the [[notify]] endpoints.
func TestNoticeOfOverdueAck(t *testing.T) {
	got := make(chan map[string]any, 10)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		json.Unmarshal(b, &m)
		got <- m
	}))
	defer rcv.Close()
	home, err := os.MkdirTemp("/tmp", "pl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	conf := fmt.Sprintf("[[notify]]\nurl = %q\non = [\"ack_overdue\"]\n", rcv.URL)
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, Config{Home: home})
	ctx := context.Background()
	h := d.Hub()
	for _, n := range []string{"alice", "bob"} {
		if _, err := h.Join(ctx, hub.JoinRequest{Workspace: "w", Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "alice", To: "bob", Content: "deploy at noon?", AckDeadline: time.Now().Add(50 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if m["kind"] != "ack_overdue" || m["agent"] != "alice" || !strings.Contains(m["message"].(string), res.Message.ID) {
			t.Errorf("notice: got %v, want ack_overdue to alice about %s", m, res.Message.ID)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no ack_overdue notice reached the receiver")
	}
}

// TestNoticeOfHeldLetter: a letter its session holds for a person is pushed
// to the [[notify]] endpoints, with why and how to let it through.
func TestNoticeOfHeldLetter(t *testing.T) {
	got := make(chan map[string]any, 10)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		json.Unmarshal(b, &m)
		got <- m
	}))
	defer rcv.Close()
	home, err := os.MkdirTemp("/tmp", "pl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	conf := fmt.Sprintf("[[notify]]\nurl = %q\non = [\"held\"]\n", rcv.URL)
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, Config{Home: home})
	ctx := context.Background()
	h := d.Hub()
	res, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "alice", To: "bob", Content: "deploy at noon?"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Handed(ctx, "w", "bob", []string{res.Message.ID}, hub.WakeDoorClaude, "L1"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.MarkLetter(ctx, "w", "bob", "L1", hub.LetterChange{Mark: hub.MarkHeld, Note: "held for approval; approve it in the session"}); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if m["kind"] != "held" || m["agent"] != "bob" || !strings.Contains(m["message"].(string), res.Message.ID) ||
			!strings.Contains(m["message"].(string), "approve it in the session") {
			t.Errorf("notice: got %v, want held for bob about %s, with how to release it", m, res.Message.ID)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no held notice reached the receiver")
	}
}
