package hub_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/hub"
)

// TestSizeLimitCountsEverything: metadata, payload and addresses count
// towards the size limit, not only the content.
func TestSizeLimitCountsEverything(t *testing.T) {
	h := newHub(t, &hub.Options{MaxContent: 1000})
	ctx := context.Background()
	big := strings.Repeat("m", 1000)
	for _, r := range []hub.SendRequest{
		{Content: "hi", Metadata: map[string]string{"k": big}},
		{Content: "hi", Metadata: map[string]string{big: "v"}},
		{Content: strings.Repeat("c", 500), Payload: []byte(`"` + strings.Repeat("p", 500) + `"`)},
	} {
		r.Workspace, r.From, r.To = "w", "a", "b"
		if _, err := h.Send(ctx, r); hub.KindOf(err) != hub.TooLarge {
			t.Errorf("send of %d content, %d payload, metadata %d: got %v, want too large", len(r.Content), len(r.Payload), len(r.Metadata), err)
		}
	}
	if _, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "a", To: "b", Content: "hi", Metadata: map[string]string{"k": "v"}}); err != nil {
		t.Errorf("a small message: %v", err)
	}
}

// TestResponseBudget: a check hands out about the budget's worth of bytes
// however high the limit, and the rest stay in the inbox, counted.
func TestResponseBudget(t *testing.T) {
	h := newHub(t, &hub.Options{MaxContent: 1000, ResponseBudget: 3000})
	ctx := context.Background()
	for i := range 20 {
		mustSend(t, h, "b", fmt.Sprintf("%03d%s", i, strings.Repeat("x", 900)))
	}
	peek, n, err := h.Peek(ctx, "w", "b", 1000)
	if err != nil || len(peek) != 3 || n != 20 {
		t.Errorf("peek: got %d messages, %d unread, %v; want 3 (the budget's worth), 20", len(peek), n, err)
	}
	msgs, remaining, err := h.Check(ctx, "w", "b", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 3 || remaining != 17 {
		t.Errorf("check: got %d messages, %d remaining; want 3 and 17", len(msgs), remaining)
	}
	total := 0
	for i, m := range msgs {
		total += m.Size()
		if !strings.HasPrefix(m.Content, fmt.Sprintf("%03d", i)) {
			t.Errorf("message %d: got %.3s, want inbox order", i, m.Content)
		}
	}
	if total > 3000 {
		t.Errorf("check handed out %d bytes, over the budget of 3000", total)
	}
	// Small messages: the limit, not the budget, bounds them.
	for i := range 50 {
		mustSend(t, h, "c", fmt.Sprint("small ", i))
	}
	if msgs, remaining, err := h.Check(ctx, "w", "c", 50); err != nil || len(msgs) != 50 || remaining != 0 {
		t.Errorf("small messages: got %d, %d remaining, %v; want all 50", len(msgs), remaining, err)
	}
	// One message larger than the budget still comes out, alone.
	h2 := newHub(t, &hub.Options{MaxContent: 5000, ResponseBudget: 3000})
	mustSend(t, h2, "d", strings.Repeat("y", 4000))
	mustSend(t, h2, "d", "next")
	if msgs, remaining, _ := h2.Check(ctx, "w", "d", 10); len(msgs) != 1 || remaining != 1 {
		t.Errorf("a message over the budget: got %d, %d remaining; want it alone", len(msgs), remaining)
	}
}

func mustSend(t *testing.T, h *hub.Hub, to, content string) {
	t.Helper()
	if _, err := h.Send(context.Background(), hub.SendRequest{Workspace: "w", From: "a", To: to, Content: content}); err != nil {
		t.Fatal(err)
	}
}

// TestReceiveCountsRemaining: a receive reports what stays in the inbox,
// whether its limit or its filter left it there.
func TestReceiveCountsRemaining(t *testing.T) {
	h := newHub(t, nil)
	ctx := context.Background()
	for i := range 3 {
		mustSend(t, h, "b", fmt.Sprint("normal ", i))
	}
	if _, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "a", To: "b", Content: "urgent", Priority: string(hub.High)}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		limit  int
		filter hub.PriorityFilter
		got    int
		left   int
	}{
		{limit: 1, got: 1, left: 3}, // the limit leaves three
		{limit: 5, filter: hub.PriorityFilter{Min: hub.High}, got: 0, left: 3}, // the filter leaves them
		{limit: 2, got: 2, left: 1},
		{limit: 5, got: 1, left: 0}, // drained
		{limit: 5, got: 0, left: 0},
	} {
		ds, left, err := h.Receive(ctx, hub.ReceiveRequest{Workspace: "w", Agent: "b", Reader: hub.KeyedReader(h, "s1"), Limit: c.limit, Filter: c.filter})
		if err != nil || len(ds) != c.got || left != c.left {
			t.Errorf("receive %d (filter %q): got %d, %d left, %v; want %d, %d left", c.limit, c.filter.Min, len(ds), left, err, c.got, c.left)
		}
	}
}
