package hub_test

import (
	"context"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/hub"
)

func TestJoinRefusesConfusableNames(t *testing.T) {
	h := newHub(t, nil)
	ctx := context.Background()
	join(t, h, "w", "bob", "dev")
	join(t, h, "w", "alice", "dev")
	for _, tt := range []struct{ name, why string }{
		{"bоb", "Cyrillic о"},
		{"bοb", "Greek ο"},
		{"ｂｏｂ", "fullwidth"},
		{"Bob", "case"},
		{"b0b", "zero for o"},
		{"bób", "accent"},
		{"аlice", "Cyrillic а"},
		{"a1ice", "one for l"},
		{"aIice", "capital I for l"},
	} {
		t.Run(tt.why, func(t *testing.T) {
			_, err := h.Join(ctx, hub.JoinRequest{Workspace: "w", Name: tt.name})
			if hub.KindOf(err) != hub.Conflict || !strings.Contains(err.Error(), "looks like the existing agent") {
				t.Errorf("join %q: got %v, want a conflict naming the look-alike", tt.name, err)
			}
		})
	}
	// Distinct names, a rejoin, and the same name in another workspace are fine.
	for _, r := range []hub.JoinRequest{{Workspace: "w", Name: "bobby"}, {Workspace: "w", Name: "bob", Role: "lead"}, {Workspace: "other", Name: "Bob"}, {Workspace: "w", Name: "carol"}} {
		if _, err := h.Join(ctx, r); err != nil {
			t.Errorf("join %+v: %v", r, err)
		}
	}
	// The message says which character differs.
	_, err := h.Join(ctx, hub.JoinRequest{Workspace: "w", Name: "bоb"})
	if err == nil || !strings.Contains(err.Error(), "U+043E, Cyrillic") {
		t.Errorf("got %v, want the Cyrillic letter named", err)
	}
}

func FuzzSkeleton(f *testing.F) {
	for _, s := range []string{"bob", "bоb", "ｂｏｂ", "Ǆ", "ﬁle", "𝐛𝐨𝐛", "e\u0301"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, a string) {
		sa := hub.Skeleton(a)
		if hub.Skeleton(a) != sa {
			t.Fatalf("Skeleton(%q) not deterministic", a)
		}
		// Plain lower-case ASCII names without 0, 1 and m (rn) are their own skeleton.
		if a != "" && strings.Trim(a, "abcdefghijklnopqrstuvwxyz._-23456789") == "" && sa != a {
			t.Fatalf("Skeleton(%q) = %q, want it unchanged", a, sa)
		}
		// A skeleton is a canonical form: it is its own skeleton.
		if again := hub.Skeleton(sa); again != sa {
			t.Fatalf("Skeleton(%q) = %q, but Skeleton(%q) = %q", a, sa, sa, again)
		}
	})
}

// TestJoinRefusesSquatting: a name built to look like another is refused
// even before that other joins (it would squat it: bоb first, then bob could
// not join); one a look-alike squatted in plain letters (Bob) is the admin's
// to claim (AllowLookalike). Names in one script, accents included, are fine.
func TestJoinRefusesSquatting(t *testing.T) {
	h := newHub(t, nil)
	ctx := context.Background()
	for _, tt := range []struct{ name, want string }{
		{"bоb", "mixes Latin letters with Cyrillic or Greek"},
		{"ἀlice", "mixes Latin letters with Cyrillic or Greek"},
		{"ｂｏｂ", "compatibility forms"},
		{"𝐛𝐨𝐛", "compatibility forms"},
		{"parley", "reserved"},
		{"аре", "all look like Latin ones"},   // all Cyrillic: ape
		{"ορα", "all look like Latin ones"},   // all Greek: opa
		{"АРЕ-2", "all look like Latin ones"}, // upper case, with a digit
	} {
		_, err := h.Join(ctx, hub.JoinRequest{Workspace: "w", Name: tt.name})
		if hub.KindOf(err) != hub.Invalid || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("join %q: got %v, want it refused: %s", tt.name, err, tt.want)
		}
	}
	for _, name := range []string{"josé", "борис", "σοφία", "dev-東京", "Bob"} {
		if _, err := h.Join(ctx, hub.JoinRequest{Workspace: "w", Name: name}); err != nil {
			t.Errorf("join %q: %v", name, err)
		}
	}
	// Bob squatted bob: refused, saying how the admin claims it; claimed.
	_, err := h.Join(ctx, hub.JoinRequest{Workspace: "w", Name: "bob"})
	if hub.KindOf(err) != hub.Conflict || !strings.Contains(err.Error(), "--allow-lookalike") {
		t.Fatalf("join bob after Bob: got %v, want a conflict that says how the admin claims it", err)
	}
	if _, err := h.Join(ctx, hub.JoinRequest{Workspace: "w", Name: "bob", Role: "dev", AllowLookalike: true}); err != nil {
		t.Fatalf("the admin joins bob after Bob: %v", err)
	}
	// A send to bob reaches bob, not Bob.
	res, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "carol", To: "bob", Content: "hi"})
	if err != nil || len(res.Recipients) != 1 || res.Recipients[0] != "bob" {
		t.Errorf("send to bob: got %+v, %v", res, err)
	}
}

// TestSendToUnjoinedLookalike: a send to a name that has not joined but looks
// like an agent that has is refused, naming the agent; a send to a new plain
// name still waits for it, and a look-alike that joined is reached.
func TestSendToUnjoinedLookalike(t *testing.T) {
	h := newHub(t, nil)
	ctx := context.Background()
	join(t, h, "w", "bob", "dev")
	for _, to := range []string{"bоb", "Bob", "b0b", "ｂｏｂ"} {
		_, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "alice", To: to, Content: "for bob"})
		if hub.KindOf(err) != hub.NotFound || !strings.Contains(err.Error(), `"bob" is`) || !strings.Contains(err.Error(), "did you mean bob") {
			t.Errorf("send to %q: got %v, want it refused, naming bob", to, err)
		}
	}
	if n, _ := h.Unread(ctx, "w", "bob"); n != 0 {
		t.Errorf("bob's inbox: %d, want nothing (the sends were refused)", n)
	}
	if _, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "alice", To: "robert", Content: "for later"}); err != nil {
		t.Errorf("send to a new name: %v", err)
	}
	// Checked once, remembered: bob joins a look-alike afterwards, as the
	// admin may; the send to it goes through.
	if _, err := h.Join(ctx, hub.JoinRequest{Workspace: "w", Name: "Bob", AllowLookalike: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "alice", To: "Bob", Content: "for Bob"}); err != nil {
		t.Errorf("send to Bob, who joined: %v", err)
	}
}

// TestCheckTokenName: a token cannot be made for a name that could not
// join: Parley's own, a person's, an alias of another agent, a name built
// to look like another, one that looks like an agent of the workspace. An
// agent that has joined gets its token.
func TestCheckTokenName(t *testing.T) {
	h := newHub(t, nil)
	ctx := context.Background()
	join(t, h, "w", "ape", "dev")
	join(t, h, "w", "claude-w-1", "dev")
	if _, err := h.Rename(ctx, hub.RenameRequest{Workspace: "w", Old: "claude-w-1", New: "ana"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		kind hub.Kind
		want string
	}{
		{"parley", hub.Invalid, "reserved"},
		{"human:ann", hub.Invalid, "person's address"},
		{"claude-w-1", hub.Conflict, "old name of \"ana\""},
		{"аре", hub.Invalid, "look like Latin ones"},
		{"bоb", hub.Invalid, "mixes Latin"},
		{"Ape", hub.Conflict, "looks like the existing agent"},
	} {
		if err := h.CheckTokenName(ctx, "w", tc.name); hub.KindOf(err) != tc.kind || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("token for %q: got %v, want a %v error: %s", tc.name, err, tc.kind, tc.want)
		}
	}
	for _, name := range []string{"ape", "ana", "newcomer"} {
		if err := h.CheckTokenName(ctx, "w", name); err != nil {
			t.Errorf("token for %q: %v", name, err)
		}
	}
}
