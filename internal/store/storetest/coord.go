package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// runReservations runs the contract of hub.Store's file reservations.
func runReservations(t *testing.T, open func(t *testing.T) hub.Store) {
	suite(t, open, store, []test[hub.Store]{
		{"RoundTrip", testReservationRoundTrip},
		{"Expiry", testReservationExpiry},
		{"UpdateAndDelete", testReservationUpdateDelete},
		{"CallbackError", testReservationCallbackError},
		{"Atomic", testReservationAtomic},
		{"WorkspaceIsolation", testReservationIsolation},
	})
}

func resv(id, ws, agent, pattern string, exclusive bool, created, expires time.Time) *hub.Reservation {
	return &hub.Reservation{ID: id, Workspace: ws, Agent: agent, Pattern: pattern, Exclusive: exclusive,
		Reason: "reason of " + id, CreatedAt: created, ExpiresAt: expires}
}

func put(t *testing.T, s hub.Store, ws string, now time.Time, rs ...*hub.Reservation) {
	t.Helper()
	err := s.ChangeReservations(ctx(t), ws, now, func([]*hub.Reservation) (hub.ReservationChange, error) {
		return hub.ReservationChange{Put: rs}, nil
	})
	if err != nil {
		t.Fatalf("ChangeReservations(put): %v", err)
	}
}

func live(t *testing.T, s hub.Store, ws string, now time.Time) []*hub.Reservation {
	t.Helper()
	rs, err := s.LiveReservations(ctx(t), ws, now)
	if err != nil {
		t.Fatalf("LiveReservations: %v", err)
	}
	return rs
}

func resvIDs(rs []*hub.Reservation) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

func checkReservation(t *testing.T, got, want *hub.Reservation) {
	t.Helper()
	g, w := *got, *want
	if !g.CreatedAt.Equal(w.CreatedAt) || !g.ExpiresAt.Equal(w.ExpiresAt) {
		t.Errorf("reservation %s times: got %v..%v, want %v..%v", w.ID, g.CreatedAt, g.ExpiresAt, w.CreatedAt, w.ExpiresAt)
	}
	g.CreatedAt, g.ExpiresAt, w.CreatedAt, w.ExpiresAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if g != w {
		t.Errorf("reservation: got %+v, want %+v", g, w)
	}
}

func testReservationRoundTrip(t *testing.T, s hub.Store) {
	a := resv("r1", "w", "alice", "src/**", true, at(0), at(60_000))
	b := resv("r2", "w", "bob", "docs/a.md", false, at(1), at(60_000))
	b.Reason = "" // an empty reason round-trips too
	put(t, s, "w", at(2), b)
	put(t, s, "w", at(3), a)
	got := live(t, s, "w", at(4))
	if want := []string{"r1", "r2"}; !slices.Equal(resvIDs(got), want) {
		t.Fatalf("live ids: got %v, want %v (oldest first)", resvIDs(got), want)
	}
	checkReservation(t, got[0], a)
	checkReservation(t, got[1], b)
	var seen []string
	err := s.ChangeReservations(ctx(t), "w", at(5), func(l []*hub.Reservation) (hub.ReservationChange, error) {
		seen = resvIDs(l)
		return hub.ReservationChange{}, nil
	})
	if err != nil || !slices.Equal(seen, []string{"r1", "r2"}) {
		t.Errorf("ChangeReservations saw %v (err %v), want [r1 r2]", seen, err)
	}
}

func testReservationExpiry(t *testing.T, s hub.Store) {
	put(t, s, "w", at(0),
		resv("short", "w", "alice", "a", true, at(0), at(100)),
		resv("long", "w", "alice", "b", true, at(0), at(1000)))
	if got := resvIDs(live(t, s, "w", at(99))); !slices.Equal(got, []string{"long", "short"}) && !slices.Equal(got, []string{"short", "long"}) {
		t.Errorf("live at 99 ms: got %v, want both", got)
	}
	// Live exactly at expiry is over.
	if got := resvIDs(live(t, s, "w", at(100))); !slices.Equal(got, []string{"long"}) {
		t.Errorf("live at 100 ms: got %v, want [long]", got)
	}
	var seen []string
	err := s.ChangeReservations(ctx(t), "w", at(500), func(l []*hub.Reservation) (hub.ReservationChange, error) {
		seen = resvIDs(l)
		return hub.ReservationChange{}, nil
	})
	if err != nil || !slices.Equal(seen, []string{"long"}) {
		t.Errorf("ChangeReservations at 500 ms saw %v (err %v), want [long]", seen, err)
	}
	// A change forgets what had expired: asking about an earlier time
	// no longer finds it.
	if got := resvIDs(live(t, s, "w", at(50))); !slices.Equal(got, []string{"long"}) {
		t.Errorf("live at 50 ms after a change at 500 ms: got %v, want [long]", got)
	}
}

func testReservationUpdateDelete(t *testing.T, s hub.Store) {
	put(t, s, "w", at(0),
		resv("r1", "w", "alice", "a/**", true, at(0), at(1000)),
		resv("r2", "w", "alice", "b", true, at(0), at(1000)))
	upd := resv("r1", "w", "alice", "a/**", false, at(0), at(5000))
	upd.Reason = "renewed"
	err := s.ChangeReservations(ctx(t), "w", at(10), func([]*hub.Reservation) (hub.ReservationChange, error) {
		return hub.ReservationChange{Put: []*hub.Reservation{upd}, Delete: []string{"r2", "absent"}}, nil
	})
	if err != nil {
		t.Fatalf("ChangeReservations: %v", err)
	}
	got := live(t, s, "w", at(2000))
	if len(got) != 1 {
		t.Fatalf("live after update and delete: got %v, want [r1]", resvIDs(got))
	}
	checkReservation(t, got[0], upd)
}

func testReservationCallbackError(t *testing.T, s hub.Store) {
	put(t, s, "w", at(0), resv("r1", "w", "alice", "a", true, at(0), at(1000)))
	boom := errors.New("boom")
	err := s.ChangeReservations(ctx(t), "w", at(1), func([]*hub.Reservation) (hub.ReservationChange, error) {
		return hub.ReservationChange{Put: []*hub.Reservation{resv("r2", "w", "bob", "b", true, at(1), at(1000))}, Delete: []string{"r1"}}, boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("ChangeReservations: got %v, want the callback's error", err)
	}
	if got := resvIDs(live(t, s, "w", at(2))); !slices.Equal(got, []string{"r1"}) {
		t.Errorf("live after a failed change: got %v, want [r1] untouched", got)
	}
}

// testReservationAtomic races changes that each add a reservation only if none
// is live: exactly one may win.
func testReservationAtomic(t *testing.T, s hub.Store) {
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			errs[i] = s.ChangeReservations(ctx(t), "w", at(0), func(l []*hub.Reservation) (hub.ReservationChange, error) {
				if len(l) > 0 {
					return hub.ReservationChange{}, nil
				}
				id := fmt.Sprintf("r%d", i)
				return hub.ReservationChange{Put: []*hub.Reservation{resv(id, "w", id, "x", true, at(0), at(1000))}}, nil
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("change %d: %v", i, err)
		}
	}
	if got := live(t, s, "w", at(1)); len(got) != 1 {
		t.Errorf("live after %d racing first-come changes: got %v, want exactly one", n, resvIDs(got))
	}
}

func testReservationIsolation(t *testing.T, s hub.Store) {
	put(t, s, "w1", at(0), resv("r1", "w1", "alice", "a", true, at(0), at(1000)))
	put(t, s, "w2", at(0), resv("r2", "w2", "alice", "a", true, at(0), at(1000)))
	var seen []string
	s.ChangeReservations(ctx(t), "w1", at(1), func(l []*hub.Reservation) (hub.ReservationChange, error) {
		seen = resvIDs(l)
		return hub.ReservationChange{Delete: []string{"r2"}}, nil
	})
	if !slices.Equal(seen, []string{"r1"}) {
		t.Errorf("w1 saw %v, want [r1]", seen)
	}
	if got := resvIDs(live(t, s, "w2", at(1))); !slices.Equal(got, []string{"r2"}) {
		t.Errorf("w2 after a delete of r2 through w1: got %v, want [r2]", got)
	}
	err := s.ChangeReservations(ctx(t), "w1", at(1), func([]*hub.Reservation) (hub.ReservationChange, error) {
		return hub.ReservationChange{Put: []*hub.Reservation{resv("r3", "w2", "alice", "b", true, at(0), at(1000))}}, nil
	})
	if err == nil {
		t.Errorf("putting a reservation of w2 through a change of w1: got no error")
	}
	if got := resvIDs(live(t, s, "w2", at(1))); !slices.Equal(got, []string{"r2"}) {
		t.Errorf("w2 after a refused cross-workspace put: got %v, want [r2]", got)
	}
}

// runSearch runs the contract of hub.Store's Search.
func runSearch(t *testing.T, open func(t *testing.T) hub.Store) {
	suite(t, open, store, []test[hub.Store]{
		{"Fields", testSearchFields},
		{"Ranking", testSearchRanking},
		{"AllTermsPhrasePrefix", testSearchTerms},
		{"Visibility", testSearchVisibility},
		{"Filters", testSearchFilters},
		{"WorkspaceIsolation", testSearchIsolation},
	})
}

func search(t *testing.T, s hub.Store, ws string, q hub.SearchQuery, query string) []hub.SearchHit {
	t.Helper()
	terms, err := hub.ParseSearchQuery(query)
	if err != nil {
		t.Fatalf("ParseSearchQuery(%q): %v", query, err)
	}
	q.Terms = terms
	if q.Limit == 0 {
		q.Limit = 20
	}
	hits, err := s.Search(ctx(t), ws, q)
	if err != nil {
		t.Fatalf("Search(%q): %v", query, err)
	}
	return hits
}

func hitContents(hits []hub.SearchHit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Message.Content
	}
	return out
}

func testSearchFields(t *testing.T, s hub.Store) {
	f := newFixture(t, s)
	m := f.msg("w", "alice", hub.Normal, "deploy the gateway tonight")
	m.Payload = json.RawMessage(`{"ticket":{"title":"quasar outage"},"n":7,"tags":["zephyr"]}`)
	m.Metadata = map[string]string{"component": "nimbus", "kind": "ops"}
	if err := s.CreateMessage(ctx(t), m, []string{"bob"}); err != nil {
		t.Fatal(err)
	}
	for _, word := range []string{"gateway", "quasar", "zephyr", "nimbus"} {
		hits := search(t, s, "w", hub.SearchQuery{}, word)
		if len(hits) != 1 || hits[0].Message.ID != m.ID {
			t.Errorf("search %q: got %v, want the one message", word, hitContents(hits))
			continue
		}
		checkMessage(t, "hit", hits[0].Message, m)
		if !strings.Contains(strings.ToLower(hits[0].Snippet), "**"+word+"**") {
			t.Errorf("search %q: snippet %q does not mark the word with **", word, hits[0].Snippet)
		}
	}
	// Metadata keys and JSON keys are not text of the message.
	for _, word := range []string{"component", "ticket"} {
		if hits := search(t, s, "w", hub.SearchQuery{}, word); len(hits) != 0 {
			t.Errorf("search %q (a key): got %v, want nothing", word, hitContents(hits))
		}
	}
}

func testSearchRanking(t *testing.T, s hub.Store) {
	f := newFixture(t, s)
	f.send("w", "alice", hub.Normal, "unrelated chatter about lunch plans and the weather today", "bob")
	once := f.send("w", "alice", hub.Normal, "a long note that mentions the flaky migration once among many other words about several topics", "bob")
	many := f.send("w", "alice", hub.Normal, "flaky test, flaky build, flaky migration", "bob")
	hits := search(t, s, "w", hub.SearchQuery{}, "flaky")
	if len(hits) != 2 || hits[0].Message.ID != many.ID || hits[1].Message.ID != once.ID {
		t.Fatalf("search flaky: got %v, want the message that says it most first", hitContents(hits))
	}
	if !(hits[0].Score <= hits[1].Score) {
		t.Errorf("scores: got %v then %v, want ascending (lower is better)", hits[0].Score, hits[1].Score)
	}
}

func testSearchTerms(t *testing.T, s hub.Store) {
	f := newFixture(t, s)
	f.send("w", "alice", hub.Normal, "rollback the schema migration", "bob")
	f.send("w", "alice", hub.Normal, "migration of the schema is done", "bob")
	f.send("w", "alice", hub.Normal, "migrating later", "bob")
	f.send("w", "alice", hub.Normal, `she said "OR" NOT AND (x) * -- a:b`, "bob")
	f.send("w", "alice", hub.Normal, "deployment finished", "bob")
	f.send("w", "alice", hub.Normal, "deploy the app", "bob")
	f.send("w", "alice", hub.Normal, "redeploy it", "bob")
	tests := []struct {
		query string
		want  []string
	}{
		{"schema migration", []string{"migration of the schema is done", "rollback the schema migration"}},
		{`"schema migration"`, []string{"rollback the schema migration"}},
		{"rollback done", nil},
		{"migrat*", []string{"migrating later", "migration of the schema is done", "rollback the schema migration"}},
		// A prefix matches the words it starts, whatever a stemmer makes of
		// it (porter stems deploy to deploi, deployment to deploy).
		{"deploy*", []string{"deploy the app", "deployment finished"}},
		{"deploy* finished", []string{"deployment finished"}},
		{"app deploy*", []string{"deploy the app"}},
		{"redeploy*", []string{"redeploy it"}},
		// Operators and punctuation are words or nothing, never syntax errors.
		{`OR NOT AND (x) a:b "`, []string{`she said "OR" NOT AND (x) * -- a:b`}},
	}
	for _, tt := range tests {
		got := hitContents(search(t, s, "w", hub.SearchQuery{}, tt.query))
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("search %q: got %q, want %q", tt.query, got, tt.want)
		}
	}
}

func testSearchVisibility(t *testing.T, s hub.Store) {
	f := newFixture(t, s)
	f.send("w", "alice", hub.Normal, "secret one from alice to bob", "bob")
	two := f.send("w", "carol", hub.Normal, "secret two from carol to alice and dave", "alice", "dave")
	f.send("w", "carol", hub.Normal, "secret three from carol to dave", "dave")
	// A reply between two others in alice's thread is hers to read too.
	four := f.msg("w", "dave", hub.Normal, "secret four from dave to carol in thread two")
	four.ReplyTo, four.ThreadID = two.ID, two.ThreadID
	if err := s.CreateMessage(ctx(t), four, []string{"carol"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		viewer string
		want   int
	}{
		{"", 4}, // a person sees the workspace
		{"alice", 3},
		{"bob", 1},
		{"carol", 3},
		{"dave", 3},
		{"eve", 0},
	}
	for _, tt := range tests {
		if got := search(t, s, "w", hub.SearchQuery{Viewer: tt.viewer}, "secret"); len(got) != tt.want {
			t.Errorf("viewer %q: got %d hits %q, want %d", tt.viewer, len(got), hitContents(got), tt.want)
		}
	}
	// The viewer's one match ranks below many that others see: a store
	// that ranks first and filters after must still find it.
	for range 40 {
		f.send("w", "alice", hub.Normal, "needle needle needle", "bob")
	}
	mine := f.send("w", "carol", hub.Normal, "a haystack with one needle in a long sentence of many words", "eve")
	got := search(t, s, "w", hub.SearchQuery{Viewer: "eve", Limit: 1}, "needle")
	if len(got) != 1 || got[0].Message.ID != mine.ID {
		t.Errorf("eve searches needle, limit 1: got %q, want her one message", hitContents(got))
	}
	if got := search(t, s, "w", hub.SearchQuery{Viewer: "bob", Limit: 100}, "needle"); len(got) != 40 {
		t.Errorf("bob searches needle: got %d hits, want 40", len(got))
	}
}

func testSearchFilters(t *testing.T, s hub.Store) {
	f := newFixture(t, s)
	root := f.send("w", "alice", hub.Normal, "topic alpha starts", "bob")
	reply := f.msg("w", "bob", hub.Normal, "topic alpha reply")
	reply.ReplyTo, reply.ThreadID = root.ID, root.ThreadID
	if err := s.CreateMessage(ctx(t), reply, []string{"alice"}); err != nil {
		t.Fatal(err)
	}
	late := f.send("w", "carol", hub.Normal, "topic alpha again", "bob")
	tests := []struct {
		name string
		q    hub.SearchQuery
		want int
	}{
		{"none", hub.SearchQuery{}, 3},
		{"from", hub.SearchQuery{From: "bob"}, 1},
		{"thread", hub.SearchQuery{Thread: root.ThreadID}, 2},
		{"since", hub.SearchQuery{Since: late.CreatedAt}, 1},
		{"limit", hub.SearchQuery{Limit: 2}, 2},
		{"from and viewer", hub.SearchQuery{From: "carol", Viewer: "alice"}, 0},
	}
	for _, tt := range tests {
		if got := search(t, s, "w", tt.q, "alpha"); len(got) != tt.want {
			t.Errorf("%s: got %d hits %q, want %d", tt.name, len(got), hitContents(got), tt.want)
		}
	}
}

func testSearchIsolation(t *testing.T, s hub.Store) {
	f := newFixture(t, s)
	f.send("w1", "alice", hub.Normal, "mercury rising", "bob")
	f.send("w2", "alice", hub.Normal, "mercury falling", "bob")
	got := search(t, s, "w1", hub.SearchQuery{}, "mercury")
	if len(got) != 1 || got[0].Message.Workspace != "w1" {
		t.Errorf("search in w1: got %q, want only w1's message", hitContents(got))
	}
}
