package hub_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

func TestOpenDoorChecks(t *testing.T) {
	ctx := context.Background()
	h := newHub(t, &hub.Options{Host: "h1"})
	ok := hub.SessionDoor{Workspace: "w", Agent: "bob", Kind: hub.DoorClaude, Session: "s1", Address: "/tmp/cc-socks/1.sock", Token: "t"}
	tests := []struct {
		name   string
		edit   func(*hub.SessionDoor)
		errHas string
	}{
		{"no kind", func(d *hub.SessionDoor) { d.Kind = "" }, "invalid door kind"},
		{"unknown kind", func(d *hub.SessionDoor) { d.Kind = "gemini" }, "invalid door kind"},
		{"no agent", func(d *hub.SessionDoor) { d.Agent = "" }, "agent name must not be empty"},
		{"no session", func(d *hub.SessionDoor) { d.Session = "" }, "no session"},
		{"relative socket", func(d *hub.SessionDoor) { d.Address = "cc-socks/1.sock" }, "not an absolute path"},
		{"relative codex home", func(d *hub.SessionDoor) { d.Kind, d.Address = hub.DoorCodex, ".codex" }, "CODEX_HOME"},
		{"newline in socket", func(d *hub.SessionDoor) { d.Address = "/tmp/a\n.sock" }, "control characters"},
		{"huge token", func(d *hub.SessionDoor) { d.Token = strings.Repeat("x", 300) }, "token is 300 bytes"},
		{"no workspace", func(d *hub.SessionDoor) { d.Workspace = "" }, "workspace must not be empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := ok
			tt.edit(&d)
			_, err := h.OpenDoor(ctx, d)
			if err == nil || hub.KindOf(err) != hub.Invalid || !strings.Contains(err.Error(), tt.errHas) {
				t.Errorf("got %v, want an invalid error with %q", err, tt.errHas)
			}
		})
	}
	if ds, err := h.Doors(ctx, "w", "", true); err != nil || len(ds) != 0 {
		t.Errorf("doors after refusals: got %d, %v; want none", len(ds), err)
	}
	d, err := h.OpenDoor(ctx, ok)
	if err != nil {
		t.Fatal(err)
	}
	if d.ID == "" || d.Host != "h1" || !d.Open() {
		t.Errorf("opened: got %+v, want an id, host h1, open", d)
	}
}

// TestDoorClosesWithItsSession: the doors an MCP session registered close
// when it ends; another session's stay open.
func TestDoorClosesWithItsSession(t *testing.T) {
	ctx := context.Background()
	h := newHub(t, nil)
	var events []hub.EventKind
	cancel := h.Subscribe(func(e hub.Event) {
		if e.SessionDoor != nil {
			events = append(events, e.Kind)
		}
	})
	defer cancel()
	a, _ := h.OpenDoor(ctx, hub.SessionDoor{Workspace: "w", Agent: "bob", Kind: hub.DoorClaude, Session: "s1", Address: "/s/1.sock", Owner: "mcp-1"})
	b, _ := h.OpenDoor(ctx, hub.SessionDoor{Workspace: "w", Agent: "bob", Kind: hub.DoorCodex, Session: "th", Address: "/h/.codex", Owner: "mcp-2"})
	h.CloseDoorsOf(ctx, "w", "bob", "mcp-1")
	ds, err := h.Doors(ctx, "w", "bob", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		switch d.ID {
		case a.ID:
			if d.Open() || d.CloseReason != hub.DoorClosedSessionEnded {
				t.Errorf("the ended session's door: got open %v, reason %q", d.Open(), d.CloseReason)
			}
		case b.ID:
			if !d.Open() {
				t.Errorf("the other session's door closed: %q", d.CloseReason)
			}
		}
	}
	want := []hub.EventKind{hub.EventDoorOpened, hub.EventDoorOpened, hub.EventDoorClosed}
	if len(events) != len(want) || events[2] != hub.EventDoorClosed {
		t.Errorf("events: got %v, want %v", events, want)
	}
}

func TestDeliverModes(t *testing.T) {
	for _, tt := range []struct {
		p    hub.Priority
		want hub.DeliverMode
	}{{hub.Critical, hub.DeliverSteer}, {hub.High, hub.DeliverSteer}, {hub.Normal, hub.DeliverIdle}, {hub.Low, hub.DeliverQueue}} {
		if got := hub.DefaultDeliver(tt.p); got != tt.want {
			t.Errorf("DefaultDeliver(%s): got %s, want %s", tt.p, got, tt.want)
		}
	}
	ctx := context.Background()
	h := newHub(t, nil)
	res, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "a", To: "b", Content: "x", Priority: "low", Deliver: "steer"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Message.Deliver != hub.DeliverSteer || res.Message.Mode() != hub.DeliverSteer {
		t.Errorf("deliver steer on a low message: got %q (mode %q)", res.Message.Deliver, res.Message.Mode())
	}
	res, _ = h.Send(ctx, hub.SendRequest{Workspace: "w", From: "a", To: "b", Content: "x", Priority: "low"})
	if res.Message.Deliver != "" || res.Message.Mode() != hub.DeliverQueue {
		t.Errorf("no deliver on a low message: got %q (mode %q), want none (queue)", res.Message.Deliver, res.Message.Mode())
	}
	_, err = h.Send(ctx, hub.SendRequest{Workspace: "w", From: "a", To: "b", Content: "x", Deliver: "shout"})
	if err == nil || hub.KindOf(err) != hub.Invalid || !strings.Contains(err.Error(), "want queue, idle, steer or interrupt") {
		t.Errorf("deliver shout: got %v", err)
	}
}

func TestTTL(t *testing.T) {
	ctx := context.Background()
	h, c := newClockHub(t)
	join(t, h, "w", "b", "dev")
	send := func(ttl time.Duration) (*hub.Message, error) {
		res, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "a", To: "b", Content: "x", TTL: ttl})
		if err != nil {
			return nil, err
		}
		return res.Message, nil
	}
	m, _ := send(0)
	if !m.ExpiresAt.Equal(c.now().Add(hub.DefaultTTL)) {
		t.Errorf("default: expires %v, want %v", m.ExpiresAt, c.now().Add(hub.DefaultTTL))
	}
	m, _ = send(time.Minute)
	if !m.ExpiresAt.Equal(c.now().Add(time.Minute)) {
		t.Errorf("a minute: expires %v", m.ExpiresAt)
	}
	m, _ = send(hub.NoTTL)
	if !m.ExpiresAt.IsZero() {
		t.Errorf("none: expires %v, want never", m.ExpiresAt)
	}
	for _, bad := range []time.Duration{-2 * time.Second, hub.MaxTTL + time.Second} {
		if _, err := send(bad); err == nil || hub.KindOf(err) != hub.Invalid {
			t.Errorf("ttl %s: got %v, want invalid", bad, err)
		}
	}
	// A daemon without a default: none.
	h2 := newHub(t, &hub.Options{TTL: hub.NoTTL})
	join(t, h2, "w", "b", "dev")
	res, err := h2.Send(ctx, hub.SendRequest{Workspace: "w", From: "a", To: "b", Content: "x"})
	if err != nil || !res.Message.ExpiresAt.IsZero() {
		t.Errorf("no default: got %v, %v", res.Message.ExpiresAt, err)
	}
}

// TestUnjoinedRecipient: a message to a name that never joined waits in
// its inbox, says so (Unjoined), and lives UnjoinedTTL unless the send
// names a time to live or keeps it (Sidechat); the names that look like it
// are the sender's suggestions. Roles, old names and joined names are not
// unjoined.
func TestUnjoinedRecipient(t *testing.T) {
	ctx := context.Background()
	h, c := newClockHub(t)
	for _, n := range []string{"bob", "boris", "alice", "robert"} {
		join(t, h, "w", n, "dev")
	}
	send := func(r hub.SendRequest) *hub.SendResult {
		t.Helper()
		r.Workspace, r.From, r.Content = "w", "alice", "x"
		res, err := h.Send(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := send(hub.SendRequest{To: "bbo"})
	if !res.Unjoined || !res.Message.ExpiresAt.Equal(c.now().Add(hub.DefaultUnjoinedTTL)) || res.Presence[0] != hub.PresenceUnregistered {
		t.Errorf("to bbo: unjoined %v, expires %v, presence %v; want unjoined, in %s", res.Unjoined, res.Message.ExpiresAt, res.Presence, hub.DefaultUnjoinedTTL)
	}
	if res := send(hub.SendRequest{To: "bbo", TTL: time.Hour}); !res.Message.ExpiresAt.Equal(c.now().Add(time.Hour)) {
		t.Errorf("to bbo with a ttl: expires %v, want in an hour", res.Message.ExpiresAt)
	}
	if res := send(hub.SendRequest{To: "bbo", KeepUnjoined: true}); !res.Unjoined || !res.Message.ExpiresAt.Equal(c.now().Add(hub.DefaultTTL)) {
		t.Errorf("to bbo, kept: expires %v, want the default", res.Message.ExpiresAt)
	}
	for _, to := range []string{"bob", "@dev"} {
		if res := send(hub.SendRequest{To: to}); res.Unjoined || !res.Message.ExpiresAt.Equal(c.now().Add(hub.DefaultTTL)) {
			t.Errorf("to %s: unjoined %v, expires %v, want the default", to, res.Unjoined, res.Message.ExpiresAt)
		}
	}
	for _, tc := range []struct {
		name string
		want []string
	}{{"bbo", []string{"bob"}}, {"Bob", []string{"bob"}}, {"bor", []string{"bob", "boris"}}, {"roberto", []string{"robert"}}, {"zed", []string{}}, {"bori", []string{"boris", "bob"}}} {
		got, err := h.NearNames(ctx, "w", tc.name)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("near %s: %v %v, want %v", tc.name, got, err, tc.want)
		}
	}
}

// TestBounce: a copy that nothing reached bounces when its time to live
// ends, if its recipient has no reader and no door; the sender gets one
// notice with the reason, and the copy is in the dead letters.
func TestBounce(t *testing.T) {
	ctx := context.Background()
	h, c := newClockHub(t)
	join(t, h, "w", "alice", "lead")
	join(t, h, "w", "present", "dev")
	join(t, h, "w", "doored", "dev")
	join(t, h, "w", "gone", "dev")
	c.add(hub.ActiveWindow + time.Second) // nobody was seen lately
	h.SessionOpened("w", "present")       // a reader
	if _, err := h.OpenDoor(ctx, hub.SessionDoor{Workspace: "w", Agent: "doored", Kind: hub.DoorCodex, Session: "th", Address: "/h/.codex"}); err != nil {
		t.Fatal(err)
	}
	gd, _ := h.OpenDoor(ctx, hub.SessionDoor{Workspace: "w", Agent: "gone", Kind: hub.DoorClaude, Session: "s9", Address: "/s/9.sock"})
	send := func(to string, ttl time.Duration) *hub.Message {
		t.Helper()
		res, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "alice", To: to, Content: "hello " + to, TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		return res.Message
	}
	toNobody := send("nobody", time.Minute) // never registered
	toPresent := send("present", time.Minute)
	toDoored := send("doored", time.Minute)
	toGone := send("gone", time.Minute)
	later := send("nobody", time.Hour)
	// gone's door goes away after the send.
	c.add(time.Second)
	if _, err := h.CloseDoor(ctx, "w", gd.ID, hub.DoorClosedGone); err != nil {
		t.Fatal(err)
	}
	h.Sweep(ctx)
	if n := deadCount(t, h); n != 0 {
		t.Fatalf("before the time to live ends: %d bounced", n)
	}
	c.add(time.Minute)
	h.Sweep(ctx)
	state := func(m *hub.Message, who string) *hub.Delivery {
		t.Helper()
		st, err := h.MessageStatus(ctx, "w", "alice", m.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range st.Deliveries {
			if d.Recipient == who {
				return d
			}
		}
		t.Fatalf("no copy of %s for %s", m.ID, who)
		return nil
	}
	if d := state(toNobody, "nobody"); d.State != hub.Bounced || d.BounceReason != hub.BounceNoReader {
		t.Errorf("to nobody: got %s %q, want bounced, %q", d.State, d.BounceReason, hub.BounceNoReader)
	}
	if d := state(toGone, "gone"); d.State != hub.Bounced || !strings.HasPrefix(d.BounceReason, hub.BounceDoorGone) || !strings.Contains(d.BounceReason, "s9") {
		t.Errorf("to gone: got %s %q, want bounced, door gone (session s9)", d.State, d.BounceReason)
	}
	if d := state(toPresent, "present"); d.State != hub.Queued {
		t.Errorf("to a present agent: got %s, want queued", d.State)
	}
	if d := state(toDoored, "doored"); d.State != hub.Queued {
		t.Errorf("to an agent with a door: got %s, want queued", d.State)
	}
	if d := state(later, "nobody"); d.State != hub.Queued {
		t.Errorf("a message with time left: got %s, want queued", d.State)
	}
	// The sender got one notice per bounced message, with the reason.
	msgs, _, err := h.Check(ctx, "w", "alice", 10)
	if err != nil {
		t.Fatal(err)
	}
	var notices []string
	for _, m := range msgs {
		if m.From == hub.NoticeSender && m.Metadata["kind"] == "bounced" {
			notices = append(notices, m.Metadata["message_id"]+": "+m.Content)
			if !m.ExpiresAt.IsZero() {
				t.Errorf("a bounce notice has a time to live: %v", m.ExpiresAt)
			}
		}
	}
	if len(notices) != 2 || !strings.Contains(strings.Join(notices, "\n"), toNobody.ID+": Bounced: your message "+toNobody.ID) ||
		!strings.Contains(strings.Join(notices, "\n"), "its door is gone") {
		t.Errorf("notices: got %q, want two, naming the messages and reasons", notices)
	}
	if n := deadCount(t, h); n != 2 {
		t.Errorf("dead letters: got %d, want 2", n)
	}
	// Sweeping again bounces nothing more and sends no more notices.
	c.add(time.Minute)
	h.Sweep(ctx)
	if n := deadCount(t, h); n != 2 {
		t.Errorf("dead letters after another sweep: got %d, want 2", n)
	}
	if n, _ := h.Unread(ctx, "w", "alice"); n != 0 {
		t.Errorf("alice has %d more unread after another sweep", n)
	}
}

func deadCount(t *testing.T, h *hub.Hub) int {
	t.Helper()
	ds, err := h.Bounced(context.Background(), "w", "alice", 100)
	if err != nil {
		t.Fatal(err)
	}
	return len(ds)
}

// TestLetterMarks: what the client says of a letter moves the copies it
// told of, once each, and announces it: seen, held with its words, released.
// A door's path is recorded only with its letter.
func TestLetterMarks(t *testing.T) {
	ctx := context.Background()
	h, _ := newClockHub(t)
	res, _ := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "a", To: "bob", Content: "x"})
	id := res.Message.ID
	via := hub.DoorClaude.WakePath()
	if _, err := h.NoteWake(ctx, "w", "bob", []string{id}, via); err == nil {
		t.Errorf("NoteWake with a door's path: no error")
	}
	if n, err := h.Handed(ctx, "w", "bob", []string{id}, via, "L1"); err != nil || n != 1 {
		t.Fatalf("Handed: %d %v", n, err)
	}
	var events []string
	cancel := h.Subscribe(func(e hub.Event) {
		if e.MessageID == id {
			events = append(events, string(e.Kind)+":"+e.Letter+":"+e.Reason)
		}
	})
	defer cancel()
	if ds, err := h.MarkLetter(ctx, "w", "bob", "L1", hub.LetterChange{Mark: hub.MarkHeld, Note: "held for approval"}); err != nil || len(ds) != 1 || ds[0].Door != hub.DoorHeld {
		t.Fatalf("held: %v %v", ds, err)
	}
	if ds, err := h.MarkLetter(ctx, "w", "bob", "L1", hub.LetterChange{Mark: hub.MarkReleased}); err != nil || len(ds) != 1 {
		t.Fatalf("released: %v %v", ds, err)
	}
	if n, err := h.LetterSeen(ctx, "w", "bob", "L2"); err != nil || n != 0 {
		t.Errorf("another letter seen: %d %v, want nothing", n, err)
	}
	if n, err := h.LetterSeen(ctx, "w", "bob", "L1"); err != nil || n != 1 {
		t.Fatalf("LetterSeen: %d %v", n, err)
	}
	if n, err := h.LetterSeen(ctx, "w", "bob", "L1"); err != nil || n != 0 {
		t.Errorf("LetterSeen again: %d %v", n, err)
	}
	want := []string{"message.held:L1:held for approval", "message.handed:L1:", "message.seen:L1:"}
	if !slices.Equal(events, want) {
		t.Errorf("events: got %q, want %q", events, want)
	}
	if _, err := h.MarkLetter(ctx, "w", "bob", "L1", hub.LetterChange{Mark: "smoke"}); err == nil {
		t.Errorf("a bad mark: no error")
	}
	if _, err := h.MarkLetter(ctx, "w", "bob", "", hub.LetterChange{Mark: hub.MarkSeen}); err == nil {
		t.Errorf("no letter: no error")
	}
}

// TestLetterSeenBeforeMarked: a session that reports its letter before the
// doorman recorded the letter's copies (the letter was written, the record
// not yet) still gets them seen, as they are recorded; another letter's
// copies wait for their own report.
func TestLetterSeenBeforeMarked(t *testing.T) {
	ctx := context.Background()
	h := newHub(t, nil)
	res, _ := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "a", To: "bob", Content: "x"})
	if n, err := h.LetterSeen(ctx, "w", "bob", "L1"); err != nil || n != 0 {
		t.Fatalf("LetterSeen before the record: %d %v", n, err)
	}
	res2, _ := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "a", To: "bob", Content: "y"})
	h.Handed(ctx, "w", "bob", []string{res2.Message.ID}, hub.WakeDoorClaude, "L2")
	if _, err := h.Handed(ctx, "w", "bob", []string{res.Message.ID}, hub.WakeDoorClaude, "L1"); err != nil {
		t.Fatal(err)
	}
	st, _ := h.MessageStatus(ctx, "w", "a", res.Message.ID)
	if d := st.Deliveries[0]; d.SeenAt.IsZero() {
		t.Errorf("a copy recorded just after its letter was seen: not seen")
	}
	st, _ = h.MessageStatus(ctx, "w", "a", res2.Message.ID)
	if d := st.Deliveries[0]; !d.SeenAt.IsZero() {
		t.Errorf("another letter's copy was seen with the report of L1")
	}
}

// TestDeclinedComesBack: a letter a person declined takes its copies out of
// the inbox, declined; the sender gets a notice that says why and how to
// send it again; Redeliver puts the copy back, and the next read gets it.
func TestDeclinedComesBack(t *testing.T) {
	ctx := context.Background()
	h := newHub(t, nil)
	res, _ := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "alice", To: "bob", Content: "please deploy"})
	id := res.Message.ID
	h.Handed(ctx, "w", "bob", []string{id}, hub.WakeDoorClaude, "L1")
	ds, err := h.MarkLetter(ctx, "w", "bob", "L1", hub.LetterChange{Mark: hub.MarkDeclined, Note: "declined in the session"})
	if err != nil || len(ds) != 1 || ds[0].State != hub.Declined {
		t.Fatalf("declined: %v %v", ds, err)
	}
	if n, _ := h.Unread(ctx, "w", "bob"); n != 0 {
		t.Errorf("bob's unread after the decline: %d, want 0", n)
	}
	notice, _, err := h.Check(ctx, "w", "alice", 10)
	if err != nil || len(notice) != 1 {
		t.Fatalf("alice's notices: %v %v", notice, err)
	}
	if m := notice[0]; m.Metadata["kind"] != "declined" || !strings.Contains(m.Content, "declined in the session") ||
		!strings.Contains(m.Content, "parley redeliver "+id) || m.From != hub.NoticeSender {
		t.Errorf("the notice: %+v", m)
	}
	if dead, _ := h.Bounced(ctx, "w", "alice", 10); len(dead) != 1 || dead[0].State != hub.Declined {
		t.Errorf("dead letters: %v", dead)
	}
	if _, err := h.Redeliver(ctx, "w", "bob", id); err != nil {
		t.Fatal(err)
	}
	got, _, err := h.Check(ctx, "w", "bob", 10)
	if err != nil || len(got) != 1 || got[0].ID != id {
		t.Errorf("bob's read after Redeliver: %v %v", got, err)
	}
	if _, err := h.Redeliver(ctx, "w", "bob", id); !hub.IsNotFound(err) {
		t.Errorf("Redeliver of a read copy: got %v, want not found", err)
	}
}
