package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

func searchCount(t *testing.T, db *DB, ws, query string) int {
	t.Helper()
	terms, err := hub.ParseSearchQuery(query)
	if err != nil {
		t.Fatal(err)
	}
	hits, err := db.Search(context.Background(), ws, hub.SearchQuery{Terms: terms, Limit: 100})
	if err != nil {
		t.Fatalf("Search(%q): %v", query, err)
	}
	return len(hits)
}

// ftsIntegrity asks FTS5 to compare both indexes with the content they
// index, once what is owed to them is paid (a message owed is in the content
// and not yet in the index).
func ftsIntegrity(t *testing.T, db *DB) {
	t.Helper()
	if err := db.wr.payDebt(context.Background()); err != nil {
		t.Fatalf("index what is owed: %v", err)
	}
	execWriter(t, db, `INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)`)
	execWriter(t, db, `INSERT INTO messages_words (messages_words, rank) VALUES ('integrity-check', 1)`)
}

func TestSearchStems(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	m := &hub.Message{ID: "01J00000000000000000000001", Workspace: "w", From: "a", Content: "the parsing of my résumé is failing",
		Priority: hub.Normal, CreatedAt: time.Now()}
	if err := db.CreateMessage(ctx, m, []string{"b"}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"parse", "resume", "fails", "PARSING"} {
		if n := searchCount(t, db, "w", q); n != 1 {
			t.Errorf("search %q: got %d hits, want 1", q, n)
		}
	}
}

// TestSearchFollowsDeletes deletes messages the way a purge does, with plain
// SQL, and checks that the index forgets them in the same transaction.
func TestSearchFollowsDeletes(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	for i := range 10 {
		m := &hub.Message{ID: fmt.Sprintf("01J0000000000000000000%04d", i), Workspace: "w", From: "a",
			Content: fmt.Sprintf("kestrel number %d", i), Payload: []byte(`{"k":"falcon"}`),
			Metadata: map[string]string{"bird": "osprey"}, Priority: hub.Normal, CreatedAt: time.Now()}
		if err := db.CreateMessage(ctx, m, []string{"b"}); err != nil {
			t.Fatal(err)
		}
	}
	ftsIntegrity(t, db)
	onWriter(t, db, func(ctx context.Context, c *sql.Conn) error {
		if _, err := c.ExecContext(ctx, `DELETE FROM deliveries WHERE message_seq IN (SELECT seq FROM messages WHERE content LIKE '%1' OR content LIKE '%2')`); err != nil {
			return err
		}
		_, err := c.ExecContext(ctx, `DELETE FROM messages WHERE content LIKE '%1' OR content LIKE '%2'`)
		return err
	})
	for _, q := range []string{"kestrel", "falcon", "osprey"} {
		if n := searchCount(t, db, "w", q); n != 8 {
			t.Errorf("search %q after deleting 2 of 10: got %d, want 8", q, n)
		}
	}
	ftsIntegrity(t, db)
}

// TestSearchIndexesOlderMessages opens a database written before search
// existed (the schema version before its migration) and finds its messages.
func TestSearchIndexesOlderMessages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "parley.db")
	raw, err := sql.Open("sqlite", dsn(path))
	if err != nil {
		t.Fatal(err)
	}
	migs, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	before := slices.IndexFunc(migs, func(m migration) bool { return strings.Contains(m.name, "_reservations_search") })
	if before < 0 {
		t.Fatal("no reservations_search migration")
	}
	for _, m := range migs[:before] {
		if _, err := raw.Exec(m.sql); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := raw.Exec(fmt.Sprintf(`PRAGMA application_id = %d; PRAGMA user_version = %d;
		INSERT INTO messages (id, workspace, sender, to_addr, content, payload, priority, metadata, created_at)
		VALUES ('01J00000000000000000000001', 'w', 'a', 'b', 'an old albatross', CAST('{"x":"petrel"}' AS BLOB), 'normal', '{"k":"gannet"}', 1)`, ApplicationID, before)); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	db, err := Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{"albatross", "petrel", "gannet"} {
		if n := searchCount(t, db, "w", q); n != 1 {
			t.Errorf("search %q in a migrated database: got %d, want 1", q, n)
		}
	}
	ftsIntegrity(t, db)
}

// TestSearchOddPayloads stores payloads that are not JSON objects of text; a
// send must never fail for the index's sake.
func TestSearchOddPayloads(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	for i, p := range []string{`"bare string wren"`, `[1, "wren", null]`, `42`, `{}`, `not json wren`, ``} {
		m := &hub.Message{ID: fmt.Sprintf("01J0000000000000000000%04d", i), Workspace: "w", From: "a", Content: "x",
			Payload: []byte(p), Priority: hub.Normal, CreatedAt: time.Now()}
		if err := db.CreateMessage(ctx, m, []string{"b"}); err != nil {
			t.Fatalf("CreateMessage with payload %q: %v", p, err)
		}
	}
	if n := searchCount(t, db, "w", "wren"); n != 2 {
		t.Errorf("search wren: got %d, want 2 (the JSON string and the array; invalid JSON is not indexed)", n)
	}
	ftsIntegrity(t, db)
}

// TestSearchBestMatchesElsewhere: a person's search takes the best matches
// from the index before it checks their workspace; when the best are all in
// another workspace, it must still find this one's.
func TestSearchBestMatchesElsewhere(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	// Distinct lengths give distinct scores, so that the order is defined;
	// the messages without the word make it a rare one.
	for i := range 90 {
		content := "kestrel kestrel kestrel" + strings.Repeat(" filler", i)
		if i >= 30 {
			content = "nothing to see here"
		}
		m := &hub.Message{ID: fmt.Sprintf("01J0000000000000000000A%03d", i), Workspace: "loud", From: "a",
			Content: content, Priority: hub.Normal, CreatedAt: time.Now()}
		if err := db.CreateMessage(ctx, m, []string{"b"}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		m := &hub.Message{ID: fmt.Sprintf("01J0000000000000000000B%03d", i), Workspace: "quiet", From: "a",
			Content: fmt.Sprintf("a kestrel among %d other words of a longer message", i), Priority: hub.Normal, CreatedAt: time.Now()}
		if err := db.CreateMessage(ctx, m, []string{"b"}); err != nil {
			t.Fatal(err)
		}
	}
	terms, _ := hub.ParseSearchQuery("kestrel")
	for _, limit := range []int{2, 20} {
		hits, err := db.Search(ctx, "quiet", hub.SearchQuery{Terms: terms, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		if want := min(limit, 5); len(hits) != want {
			t.Errorf("limit %d: got %d hits in quiet, want %d", limit, len(hits), want)
		}
		for i, h := range hits {
			if h.Message.Workspace != "quiet" {
				t.Errorf("limit %d: hit %d is from %s", limit, i, h.Message.Workspace)
			}
			if i > 0 && h.Score < hits[i-1].Score {
				t.Errorf("limit %d: scores not ascending: %v after %v", limit, h.Score, hits[i-1].Score)
			}
		}
	}
	// The quick path and the filtered scan agree: a person's search and the
	// same search narrowed by sender (every message here is a's).
	all, _ := db.Search(ctx, "loud", hub.SearchQuery{Terms: terms, Limit: 7})
	from, _ := db.Search(ctx, "loud", hub.SearchQuery{Terms: terms, From: "a", Limit: 7})
	if len(all) != 7 || len(from) != 7 {
		t.Fatalf("loud: got %d and %d hits, want 7 and 7", len(all), len(from))
	}
	for i := range all {
		if all[i].Message.ID != from[i].Message.ID || all[i].Score != from[i].Score {
			t.Errorf("hit %d: %s (%v) by the quick path, %s (%v) by the scan", i, all[i].Message.ID, all[i].Score, from[i].Message.ID, from[i].Score)
		}
	}
}

// TestSearchAgentStaysInWorkspace gives agents the same names in two
// workspaces: an agent's search of one never shows the other's messages,
// whether it sent them or was delivered them there.
func TestSearchAgentStaysInWorkspace(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	send := func(i int, ws, from, content string, to ...string) {
		t.Helper()
		m := &hub.Message{ID: fmt.Sprintf("01J0000000000000000000%04d", i), Workspace: ws, From: from, Content: content,
			Priority: hub.Normal, CreatedAt: time.Now()}
		if err := db.CreateMessage(ctx, m, to); err != nil {
			t.Fatal(err)
		}
	}
	send(1, "w1", "alice", "mercury rising in one", "bob")
	send(2, "w2", "alice", "mercury falling in two", "bob")
	send(3, "w2", "carol", "mercury at rest in two", "dave")
	send(4, "w2", "bob", "mercury from bob in two", "carol")
	for _, tt := range []struct {
		ws, viewer, query string
		want              []string
	}{
		{"w1", "alice", "mercury", []string{"mercury rising in one"}},
		{"w1", "bob", "mercury", []string{"mercury rising in one"}},
		{"w1", "carol", "mercury", nil},
		{"w1", "dave", "mercury", nil},
		{"w2", "bob", "mercury", []string{"mercury falling in two", "mercury from bob in two"}},
		{"w2", "dave", "merc*", []string{"mercury at rest in two"}},
		{"w1", "bob", "merc* rising", []string{"mercury rising in one"}},
		{"w1", "bob", "merc* falling", nil},
	} {
		terms, err := hub.ParseSearchQuery(tt.query)
		if err != nil {
			t.Fatal(err)
		}
		hits, err := db.Search(ctx, tt.ws, hub.SearchQuery{Terms: terms, Viewer: tt.viewer, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range hits {
			if h.Message.Workspace != tt.ws {
				t.Errorf("%s searches %s for %q: got a message of %s", tt.viewer, tt.ws, tt.query, h.Message.Workspace)
			}
			got = append(got, h.Message.Content)
		}
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s searches %s for %q: got %q, want %q", tt.viewer, tt.ws, tt.query, got, tt.want)
		}
	}
}

// searchPending counts the messages owed to search, on the read pool.
func searchPending(t *testing.T, db *DB) int {
	t.Helper()
	var n int
	if err := db.r.QueryRow(`SELECT count(*) FROM search_pending`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSearchReadsItsWrites: a search finds the message whose send returned
// just before it. In a synctest bubble no time passes between the two, so
// the writer's idle indexing cannot run first: the message is still owed,
// and the search must pay for it.
func TestSearchReadsItsWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openTest(t)
		ctx := context.Background()
		for i := range 3 {
			word := fmt.Sprintf("heron%c", 'a'+i)
			m := &hub.Message{ID: fmt.Sprintf("01J0000000000000000000%04d", i), Workspace: "w", From: "a",
				Content: "look, a " + word, Priority: hub.Normal, CreatedAt: time.Now()}
			if err := db.CreateMessage(ctx, m, []string{"b"}); err != nil {
				t.Fatal(err)
			}
			if n := db.wr.owed.Load(); n != 1 {
				t.Fatalf("owed after send %d: got %d, want 1 (the send indexed its message, or something else did)", i, n)
			}
			if n := searchCount(t, db, "w", word); n != 1 {
				t.Errorf("search %s right after its send: got %d hits, want 1", word, n)
			}
			if n := db.wr.owed.Load(); n != 0 {
				t.Errorf("owed after the search: got %d, want 0", n)
			}
		}
		if n := searchPending(t, db); n != 0 {
			t.Errorf("search_pending after the searches: %d rows, want 0", n)
		}
		ftsIntegrity(t, db)
	})
}

// TestSearchIndexedWhenIdle: the writer indexes what is owed once it has had
// no write for indexIdle, and at once when indexBatch messages are owed.
func TestSearchIndexedWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openTest(t)
		ctx := context.Background()
		seq := 0
		send := func() {
			t.Helper()
			seq++
			m := &hub.Message{ID: fmt.Sprintf("01J0000000000000000000%04d", seq), Workspace: "w", From: "a",
				Content: "a grebe", Priority: hub.Normal, CreatedAt: time.Now()}
			if err := db.CreateMessage(ctx, m, []string{"b"}); err != nil {
				t.Fatal(err)
			}
		}
		send()
		time.Sleep(indexIdle / 2)
		synctest.Wait()
		if n := searchPending(t, db); n != 1 {
			t.Errorf("search_pending before the writer was idle for %v: %d rows, want 1", indexIdle, n)
		}
		time.Sleep(indexIdle)
		synctest.Wait()
		if n := searchPending(t, db); n != 0 {
			t.Errorf("search_pending once the writer was idle: %d rows, want 0", n)
		}

		start := time.Now()
		for range indexBatch - 1 {
			send()
		}
		synctest.Wait()
		if n := searchPending(t, db); n != indexBatch-1 {
			t.Errorf("search_pending after %d sends: %d rows, want them all", indexBatch-1, n)
		}
		send()
		synctest.Wait()
		if n := searchPending(t, db); n != 0 {
			t.Errorf("search_pending after %d sends: %d rows, want 0", indexBatch, n)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("the batch was indexed after %v idle, want at once", d)
		}
		if n := db.wr.commits.Load(); n != int64(indexBatch+1) {
			t.Errorf("commits: got %d, want %d (indexing is not counted among the callers' commits)", n, indexBatch+1)
		}
		ftsIntegrity(t, db)
		if n := searchCount(t, db, "w", "grebe"); n != indexBatch+1 {
			t.Errorf("search grebe: got %d hits, want %d", n, indexBatch+1)
		}
	})
}

// TestSearchDebtAtCloseAndOpen: Close indexes what is owed, and Open
// indexes what a crash left owed (the rows a send queued in
// search_pending, durable with the message).
func TestSearchDebtAtCloseAndOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "parley.db")
		ctx := context.Background()
		db, err := Open(ctx, path, nil)
		if err != nil {
			t.Fatal(err)
		}
		m := &hub.Message{ID: "01J00000000000000000000001", Workspace: "w", From: "a",
			Content: "a cormorant", Priority: hub.Normal, CreatedAt: time.Now()}
		if err := db.CreateMessage(ctx, m, []string{"b"}); err != nil {
			t.Fatal(err)
		}
		if n := db.wr.owed.Load(); n != 1 {
			t.Fatalf("owed before Close: got %d, want 1", n)
		}
		db.Close()
		raw, err := sql.Open("sqlite", dsn(path))
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := raw.QueryRow(`SELECT count(*) FROM search_pending`).Scan(&n); err != nil || n != 0 {
			t.Errorf("search_pending after Close: %d rows (%v), want 0", n, err)
		}
		// What a crash after a send's commit leaves: the message queued.
		if _, err := raw.Exec(`INSERT INTO messages (id, workspace, sender, to_addr, content, priority, created_at)
			VALUES ('01J00000000000000000000002', 'w', 'a', 'b', 'another cormorant', 'normal', 1)`); err != nil {
			t.Fatal(err)
		}
		raw.Close()
		db, err = Open(ctx, path, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if n := searchPending(t, db); n != 0 {
			t.Errorf("search_pending after Open: %d rows, want 0", n)
		}
		ftsIntegrity(t, db)
		if n := searchCount(t, db, "w", "cormorant"); n != 2 {
			t.Errorf("search cormorant: got %d hits, want 2", n)
		}
	})
}
