package profile_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/ops"
)

// TestMessageOperations walks the delivery and thread operations of the
// native profile between two sessions on a real hub and SQLite:
// message_status, ack_message, list_overdue, wait_for_reply, get_thread.
func TestMessageOperations(t *testing.T) {
	e := newEnv(t)
	alice := e.Session(ops.Caller{Workspace: "w", Agent: "alice"}, nil)
	bob := e.Session(ops.Caller{Workspace: "w", Agent: "bob"}, nil)
	send := func(s *mcp.ClientSession, to, content string, extra map[string]any) string {
		t.Helper()
		args := map[string]any{"to": to, "content": content}
		for k, v := range extra {
			args[k] = v
		}
		var r api.SendResult
		if res := call(t, s, "send_message", args, &r); res.IsError {
			t.Fatalf("send_message: %s", text(res))
		}
		return r.MessageID
	}
	state := func(id string) string {
		t.Helper()
		var st api.MessageStatusResult
		if res := call(t, alice, "message_status", map[string]any{"message_id": id}, &st); res.IsError || len(st.Recipients) != 1 {
			t.Fatalf("message_status: got %+v (%s), want bob's copy", st, text(res))
		}
		return st.Recipients[0].State
	}

	// A message that asks for an ack: queued, read, acked.
	m1 := send(alice, "bob", "please ack", map[string]any{"ack_required": true, "ack_within": 600})
	if got := state(m1); got != "queued" {
		t.Errorf("before bob reads: got %s, want queued", got)
	}
	var inbox api.CheckResult
	call(t, bob, "check_messages", map[string]any{}, &inbox)
	if len(inbox.Messages) != 1 || inbox.Messages[0].MessageID != m1 || !inbox.Messages[0].AckRequired {
		t.Fatalf("check_messages: got %+v, want m1 asking for an ack", inbox.Messages)
	}
	var ack api.AckResult
	if res := call(t, bob, "ack_message", map[string]any{"message_ids": []string{m1}}, &ack); res.IsError || ack.Acked != 1 {
		t.Fatalf("ack_message: got %+v (%s), want 1 acked", ack, text(res))
	}
	if got := state(m1); got != "acked" {
		t.Errorf("after the ack: got %s, want acked", got)
	}
	if res := call(t, bob, "ack_message", map[string]any{"message_ids": []string{m1}}, &ack); res.IsError || ack.Acked != 0 {
		t.Errorf("a second ack: got %+v (%s), want 0 new", ack, text(res))
	}

	// An ack that does not come within its second is overdue.
	m2 := send(alice, "bob", "quick, ack", map[string]any{"ack_required": true, "ack_within": 1})
	var over api.OverdueResult
	waitFor(t, "m2 to be overdue", func() bool {
		call(t, alice, "list_overdue", map[string]any{}, &over)
		return len(over.Overdue) == 1
	})
	if o := over.Overdue[0]; o.MessageID != m2 || !slices.Equal(o.Pending, []string{"bob"}) {
		t.Errorf("list_overdue: got %+v, want m2 pending bob", o)
	}

	// A reply wakes its waiter, and the thread holds both.
	done := make(chan api.WaitResult, 1)
	go func() {
		var r api.WaitResult
		call(t, alice, "wait_for_reply", map[string]any{"message_id": m2, "timeout": 30}, &r)
		done <- r
	}()
	send(bob, "alice", "acked late, sorry", map[string]any{"reply_to": m2})
	if r := <-done; r.Message == nil || r.Message.Content != "acked late, sorry" || r.Message.ReplyTo != m2 {
		t.Fatalf("wait_for_reply: got %+v, want bob's reply", r)
	}
	var thread api.HistoryResult
	call(t, alice, "get_thread", map[string]any{"message_id": m2}, &thread)
	var contents []string
	for _, m := range thread.Messages {
		contents = append(contents, m.Content)
	}
	if !slices.Equal(contents, []string{"quick, ack", "acked late, sorry"}) {
		t.Errorf("get_thread: got %q, want the message and its reply", contents)
	}
}

// TestGroupOperations walks a group's life: create, add, list, remove, delete.
func TestGroupOperations(t *testing.T) {
	e := newEnv(t)
	alice := e.Session(ops.Caller{Workspace: "w", Agent: "alice"}, nil)
	e.Session(ops.Caller{Workspace: "w", Agent: "bob"}, nil)
	must := func(name string, args map[string]any, out any) {
		t.Helper()
		if res := call(t, alice, name, args, out); res.IsError {
			t.Fatalf("%s: %s", name, text(res))
		}
	}
	count := func() int {
		t.Helper()
		var gs api.ListGroupsResult
		must("list_groups", map[string]any{}, &gs)
		for _, g := range gs.Groups {
			if g.Name == "team" {
				return g.MemberCount
			}
		}
		return -1
	}
	must("create_group", map[string]any{"name": "team", "description": "the team"}, nil)
	must("add_group_member", map[string]any{"group": "team", "member_type": "agent", "member_id": "bob"}, nil)
	if got := count(); got != 1 {
		t.Errorf("after add: got %d members, want 1", got)
	}
	must("remove_group_member", map[string]any{"group": "team", "member_type": "agent", "member_id": "bob"}, nil)
	if got := count(); got != 0 {
		t.Errorf("after remove: got %d members, want 0", got)
	}
	must("delete_group", map[string]any{"name": "team"}, nil)
	if got := count(); got != -1 {
		t.Errorf("after delete: the group is still listed")
	}
	if res := call(t, alice, "delete_group", map[string]any{"name": "team"}, nil); !res.IsError || !strings.Contains(text(res), "team") {
		t.Errorf("deleting it again: got %q, want an error naming it", text(res))
	}
}

// TestSeedProfileExtras: sidechat's clear_messages and agentmail's
// list-recipients.
func TestSeedProfileExtras(t *testing.T) {
	e := newEnv(t)
	sc := e.Session(ops.Caller{Workspace: "w", Profiles: []string{"sidechat"}}, nil)
	for i := range 2 {
		if res := call(t, sc, "send_message", map[string]any{"session": "s1", "to": "scribe", "message": map[string]any{"n": i}}, nil); res.IsError {
			t.Fatalf("sidechat send: %s", text(res))
		}
	}
	var cleared struct{ Cleared int }
	if res := call(t, sc, "clear_messages", map[string]any{"session": "s1", "agent": "scribe"}, &cleared); res.IsError || cleared.Cleared != 2 {
		t.Fatalf("clear_messages: got %+v (%s), want 2", cleared, text(res))
	}
	var has struct {
		HasMessages bool `json:"has_messages"`
	}
	if call(t, sc, "has_messages", map[string]any{"session": "s1", "agent": "scribe"}, &has); has.HasMessages {
		t.Errorf("has_messages after clear_messages: got true")
	}

	e.Session(ops.Caller{Workspace: "w", Agent: "win2"}, nil)
	am := e.Session(ops.Caller{Workspace: "w", Agent: "win1", Profiles: []string{"agentmail"}}, nil)
	got := text(call(t, am, "list-recipients", map[string]any{}, nil))
	if !strings.Contains(got, "win2") || strings.Contains(got, "win1") {
		t.Errorf("list-recipients: got %q, want win2 and not the caller", got)
	}
}
