package ops

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/store/sqlite"
)

// newTestOps is the operations over a real hub on a SQLite file.
func newTestOps(t *testing.T) (*Ops, *hub.Hub) {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	h := hub.New(db, nil)
	return New(h, nil), h
}

func ptr(n int) *int { return &n }

// TestOperationErrors runs operations of every family against a real hub
// with input a caller gets wrong, and checks the kind each error carries:
// the kind is what both doors turn into an HTTP status, an MCP tool error's
// _meta and a CLI exit code.
func TestOperationErrors(t *testing.T) {
	o, h := newTestOps(t)
	ctx := context.Background()
	for _, n := range []string{"alice", "bob", "carol"} {
		if _, err := h.Join(ctx, hub.JoinRequest{Workspace: "w", Name: n, Role: "dev"}); err != nil {
			t.Fatal(err)
		}
	}
	alice := func() *Caller { return &Caller{Workspace: "w", Agent: "alice"} }
	bob := func() *Caller { return &Caller{Workspace: "w", Agent: "bob"} }
	nobody := func() *Caller { return &Caller{Workspace: "w"} }
	sent, err := o.Send(ctx, alice(), api.SendRequest{To: "bob", Content: "to bob"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		run  func() error
		want hub.Kind
	}{
		{"send: empty content", func() error { _, err := o.Send(ctx, alice(), api.SendRequest{To: "bob"}); return err }, hub.Invalid},
		{"send: bad priority", func() error {
			_, err := o.Send(ctx, alice(), api.SendRequest{To: "bob", Content: "x", Priority: "urgent"})
			return err
		}, hub.Invalid},
		{"send: ack deadline out of range", func() error {
			_, err := o.Send(ctx, alice(), api.SendRequest{To: "bob", Content: "x", AckWithin: ptr(0)})
			return err
		}, hub.Invalid},
		{"check: no agent", func() error { _, err := o.Check(ctx, nobody(), api.CheckRequest{}); return err }, hub.Invalid},
		{"check: negative limit", func() error { _, err := o.Check(ctx, bob(), api.CheckRequest{Limit: -1}); return err }, hub.Invalid},
		{"wait: timeout 0", func() error { _, err := o.Wait(ctx, bob(), api.WaitRequest{Timeout: ptr(0)}); return err }, hub.Invalid},
		{"wait: timeout over the maximum", func() error { _, err := o.Wait(ctx, bob(), api.WaitRequest{Timeout: ptr(601)}); return err }, hub.Invalid},
		{"wait: bad filter", func() error {
			_, err := o.Wait(ctx, bob(), api.WaitRequest{Timeout: ptr(1), PriorityFilter: "most"})
			return err
		}, hub.Invalid},
		{"wait for reply: no message id", func() error {
			_, err := o.WaitForReply(ctx, alice(), api.ReplyWaitRequest{Timeout: ptr(1)})
			return err
		}, hub.Invalid},
		{"wait for reply: unknown message", func() error {
			_, err := o.WaitForReply(ctx, alice(), api.ReplyWaitRequest{MessageID: "01NOPE", Timeout: ptr(1)})
			return err
		}, hub.NotFound},
		{"ack: no ids", func() error { _, err := o.Ack(ctx, bob(), api.AckRequest{}); return err }, hub.Invalid},
		{"ack: not its recipient", func() error {
			_, err := o.Ack(ctx, carolCaller(), api.AckRequest{MessageIDs: []string{sent.MessageID}})
			return err
		}, hub.Forbidden},
		{"ack: unknown message", func() error { _, err := o.Ack(ctx, bob(), api.AckRequest{MessageIDs: []string{"01NOPE"}}); return err }, hub.NotFound},
		{"status: no id", func() error { _, err := o.MessageStatus(ctx, alice(), api.MessageStatusRequest{}); return err }, hub.Invalid},
		{"status: an agent token's agent neither sends nor receives it", func() error {
			c := carolCaller()
			c.Token = "tok-carol" // the read rule: as if it did not exist
			_, err := o.MessageStatus(ctx, c, api.MessageStatusRequest{MessageID: sent.MessageID})
			return err
		}, hub.NotFound},
		{"get message: unknown", func() error { _, err := o.GetMessage(ctx, alice(), api.MessageRequest{ID: "01NOPE"}); return err }, hub.NotFound},
		{"history: negative limit", func() error { _, err := o.History(ctx, alice(), api.HistoryRequest{Limit: -1}); return err }, hub.Invalid},
		{"broadcast: bad filter", func() error {
			_, err := o.Broadcast(ctx, alice(), api.BroadcastRequest{Content: "x", Filter: &api.BroadcastFilter{Status: "asleep"}})
			return err
		}, hub.Invalid},
		{"receipt: no reader named", func() error {
			_, err := o.Receipt(ctx, bob(), api.ReceiptRequest{MessageIDs: []string{sent.MessageID}, Received: true})
			return err
		}, hub.Invalid},
		{"receipt: another agent's reader", func() error {
			c := bob()
			c.ReadAs = &hub.ReaderOptions{Key: h.OpenReader(hub.ReaderOptions{Workspace: "w", Agent: "carol"}).Key()}
			_, err := o.Receipt(ctx, c, api.ReceiptRequest{MessageIDs: []string{sent.MessageID}, Received: true})
			return err
		}, hub.Forbidden},
		{"claim: negative lease", func() error {
			_, err := o.ClaimTask(ctx, bob(), api.ClaimTaskRequest{Queue: "jobs", Timeout: ptr(1), LeaseSeconds: -1})
			return err
		}, hub.Invalid},
		{"claim: bad queue name", func() error {
			_, err := o.ClaimTask(ctx, bob(), api.ClaimTaskRequest{Queue: "bad name", Timeout: ptr(1)})
			return err
		}, hub.Invalid},
		{"complete: not a task", func() error {
			_, err := o.CompleteTask(ctx, bob(), api.CompleteTaskRequest{TaskID: sent.MessageID})
			return err
		}, hub.Invalid},
		{"release: unknown task", func() error {
			_, err := o.ReleaseTask(ctx, bob(), api.ReleaseTaskRequest{TaskID: "01NOPE"})
			return err
		}, hub.NotFound},
		{"group: unknown", func() error { _, err := o.GetGroup(ctx, alice(), api.GetGroupRequest{Name: "ghosts"}); return err }, hub.NotFound},
		{"group: everyone cannot be deleted", func() error {
			_, err := o.DeleteGroup(ctx, alice(), api.GroupNameRequest{Name: "everyone"})
			return err
		}, hub.Forbidden},
		{"managed agents: no runner", func() error { _, err := o.ListManaged(ctx, alice(), api.ManagedListRequest{}); return err }, hub.Unavailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if err == nil {
				t.Fatalf("got no error, want %s", tc.want)
			}
			if got := hub.KindOf(err); got != tc.want {
				t.Errorf("got %s (%v), want %s", got, err, tc.want)
			}
		})
	}
}

func carolCaller() *Caller { return &Caller{Workspace: "w", Agent: "carol"} }

// TestReadsReportToTheReader: what an operation hands out is leased to the
// caller's reader, opened at the first read from ReadAs, and reported to it;
// an operation that reads nothing opens none; a caller without either reads
// at once.
func TestReadsReportToTheReader(t *testing.T) {
	o, h := newTestOps(t)
	ctx := context.Background()
	alice := &Caller{Workspace: "w", Agent: "alice"}
	m, err := o.Send(ctx, alice, api.SendRequest{To: "bob", Content: "one"})
	if err != nil {
		t.Fatal(err)
	}
	if alice.Reader != nil {
		t.Fatalf("a send opened a reader")
	}
	bob := &Caller{Workspace: "w", Agent: "bob", Call: "7", ReadAs: &hub.ReaderOptions{Kind: "api", Confirm: hub.ConfirmOnWrite, OneRequest: true}}
	out, err := o.Check(ctx, bob, api.CheckRequest{})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("check: %+v %v", out, err)
	}
	if bob.Reader == nil {
		t.Fatal("a check did not open the caller's reader")
	}
	if got := bob.Reader.HandedIn("7"); len(got) != 1 || got[0] != m.MessageID {
		t.Fatalf("the reader was told of %v, want [%s]", got, m.MessageID)
	}
	st, err := h.MessageStatus(ctx, "w", "", m.MessageID)
	if err != nil || st.Deliveries[0].State != hub.Delivered || st.Deliveries[0].Reader != bob.Reader.Key() {
		t.Fatalf("before the write: %+v %v, want delivered to the reader", st.Deliveries[0], err)
	}
	bob.Reader.Written(ctx, "7", nil)
	if st, _ := h.MessageStatus(ctx, "w", "", m.MessageID); st.Deliveries[0].State != hub.Read {
		t.Errorf("after the write: %s, want read", st.Deliveries[0].State)
	}

	// No reader: read at once.
	m2, _ := o.Send(ctx, alice, api.SendRequest{To: "bob", Content: "two"})
	mi, err := o.Receive(ctx, &Caller{Workspace: "w", Agent: "bob"}, 0)
	if err != nil || mi == nil || mi.MessageID != m2.MessageID {
		t.Fatalf("receive without a reader: %v %v", mi, err)
	}
	if st, _ := h.MessageStatus(ctx, "w", "", m2.MessageID); st.Deliveries[0].State != hub.Read {
		t.Errorf("without a reader: %s, want read at once", st.Deliveries[0].State)
	}
}
