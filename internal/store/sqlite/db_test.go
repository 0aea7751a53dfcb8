package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/store/storetest"
)

// openTest opens a new database in a fresh directory; when the test ends it is
// closed and checked with PRAGMA integrity_check.
func openTest(t testing.TB) *DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "parley.db")
	db, err := Open(context.Background(), path, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		db.Close() // may be closed already; a second Close is harmless
		checkIntegrity(t, path)
	})
	return db
}

func checkIntegrity(t testing.TB, path string) {
	t.Helper()
	raw, err := sql.Open("sqlite", dsn(path, "mode=ro"))
	if err != nil {
		t.Fatalf("open for integrity check: %v", err)
	}
	defer raw.Close()
	var res string
	if err := raw.QueryRow("PRAGMA integrity_check").Scan(&res); err != nil {
		t.Fatalf("integrity_check: %v", err)
	}
	if res != "ok" {
		t.Errorf("integrity_check of %s: got %q, want ok", path, res)
	}
	var fk int
	if err := raw.QueryRow("SELECT count(*) FROM pragma_foreign_key_check").Scan(&fk); err != nil {
		t.Fatalf("foreign_key_check: %v", err)
	}
	if fk != 0 {
		t.Errorf("foreign_key_check of %s: got %d violations, want 0", path, fk)
	}
}

// onWriter runs fn on the writer connection, in its transaction.
func onWriter(t testing.TB, db *DB, fn func(ctx context.Context, c *sql.Conn) error) {
	t.Helper()
	if err := db.wr.do(context.Background(), false, fn); err != nil {
		t.Fatalf("on writer: %v", err)
	}
}

// execWriter runs one statement on the writer connection.
func execWriter(t testing.TB, db *DB, q string, args ...any) {
	t.Helper()
	onWriter(t, db, func(ctx context.Context, c *sql.Conn) error {
		_, err := c.ExecContext(ctx, q, args...)
		return err
	})
}

// TestContract runs the whole contract of a backend on SQLite.
func TestContract(t *testing.T) {
	storetest.RunAll(t, func(t *testing.T) storetest.Backend { return openTest(t) })
}

func TestReopenKeepsData(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "parley.db")
	db, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	created := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	a := &hub.Agent{Workspace: "ws", Name: "alice", Role: "dev", Status: hub.StatusReady, CreatedAt: created, LastSeen: created}
	if err := db.PutAgent(ctx, a); err != nil {
		t.Fatalf("PutAgent: %v", err)
	}
	m := &hub.Message{ID: "01J000000000000000000000M1", Workspace: "ws", From: "alice", To: "bob",
		Content: "hello", Payload: json.RawMessage(`{"x": 1}`), Priority: hub.High, ThreadID: "01J000000000000000000000M1",
		Metadata: map[string]string{"k": "v"}, CreatedAt: created}
	if err := db.CreateMessage(ctx, m, []string{"bob", "carol"}); err != nil {
		t.Fatalf("CreateMessage: %v", err)
	}
	if _, _, err := db.Take(ctx, hub.TakeQuery{Workspace: "ws", Recipient: "carol", MaxRank: 3, Limit: 1}); err != nil {
		t.Fatalf("Take: %v", err)
	}
	if err := db.CreateGroup(ctx, &hub.Group{Workspace: "ws", Name: "team", CreatedAt: created,
		Members: []hub.Member{{Type: hub.MemberRole, ID: "dev"}}}); err != nil {
		t.Fatalf("CreateGroup: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	db, err = Open(ctx, path, nil)
	if err != nil {
		t.Fatalf("Open again: %v", err)
	}
	defer db.Close()
	got, err := db.Agent(ctx, "ws", "alice")
	if err != nil {
		t.Fatalf("Agent after reopen: %v", err)
	}
	if !got.CreatedAt.Equal(created) || got.CreatedAt.Location() != time.UTC || got.Role != "dev" {
		t.Errorf("Agent after reopen: got %+v, want role dev created %v (UTC, to the nanosecond)", got, created)
	}
	gm, err := db.Message(ctx, "ws", m.ID)
	if err != nil {
		t.Fatalf("Message after reopen: %v", err)
	}
	if string(gm.Payload) != `{"x": 1}` || gm.Metadata["k"] != "v" || !gm.CreatedAt.Equal(created) || gm.CreatedAt.Location() != time.UTC {
		t.Errorf("Message after reopen: got %+v", gm)
	}
	if n, err := db.Unread(ctx, "ws", "bob", 3); err != nil || n != 1 {
		t.Errorf("Unread(bob) after reopen: got %d, %v; want 1", n, err)
	}
	if n, err := db.Unread(ctx, "ws", "carol", 3); err != nil || n != 0 {
		t.Errorf("Unread(carol) after reopen: got %d, %v; want 0", n, err)
	}
	if g, err := db.Group(ctx, "ws", "team"); err != nil || len(g.Members) != 1 {
		t.Errorf("Group after reopen: got %+v, %v", g, err)
	}
	if ws, err := db.Workspaces(ctx); err != nil || len(ws) != 1 || ws[0] != "ws" {
		t.Errorf("Workspaces after reopen: got %v, %v; want [ws]", ws, err)
	}
}

func TestPayloadEdgeCases(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	for i, tc := range []struct {
		name string
		in   json.RawMessage
	}{
		{"nil", nil},
		{"null", json.RawMessage(`null`)},
		{"binary-ish", json.RawMessage("\"\x01\xff\"")},
	} {
		id := "01J00000000000000000000P0" + string(rune('0'+i))
		m := &hub.Message{ID: id, Workspace: "ws", From: "a", To: "b", Content: "c", Priority: hub.Normal, Payload: tc.in, CreatedAt: time.Now()}
		if err := db.CreateMessage(ctx, m, []string{"b"}); err != nil {
			t.Fatalf("%s: CreateMessage: %v", tc.name, err)
		}
		got, err := db.Message(ctx, "ws", id)
		if err != nil {
			t.Fatalf("%s: Message: %v", tc.name, err)
		}
		if (got.Payload == nil) != (tc.in == nil) || !bytes.Equal(got.Payload, tc.in) {
			t.Errorf("%s: payload: got %q (nil %v), want %q (nil %v)", tc.name, got.Payload, got.Payload == nil, tc.in, tc.in == nil)
		}
	}
}

func TestBroadcastDuplicateRecipients(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	recips := make([]string, 0, 1001)
	for i := range 1000 {
		recips = append(recips, "agent-"+strings.Repeat("x", i%3)+string(rune('a'+i%26))+strconv.Itoa(i))
	}
	recips = append(recips, recips[0]) // a duplicate is delivered once
	m := &hub.Message{ID: "01J0000000000000000000BCST", Workspace: "ws", From: "a", To: "@everyone", Content: "all", Priority: hub.Normal, CreatedAt: time.Now()}
	if err := db.CreateMessage(ctx, m, recips); err != nil {
		t.Fatalf("CreateMessage to 1001: %v", err)
	}
	var n int
	if err := db.r.QueryRow(`SELECT count(*) FROM deliveries`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1000 {
		t.Errorf("deliveries: got %d, want 1000", n)
	}
	if u, err := db.Unread(ctx, "ws", recips[0], 3); err != nil || u != 1 {
		t.Errorf("Unread(%s): got %d, %v; want 1", recips[0], u, err)
	}
}

func TestFileMode(t *testing.T) {
	db := openTest(t)
	fi, err := os.Stat(db.Path())
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("mode of %s: got %#o, want 0600", db.Path(), got)
	}
	// A write makes the WAL exist; SQLite gives it the database's mode.
	if err := db.PutAgent(context.Background(), &hub.Agent{Workspace: "ws", Name: "a"}); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		fi, err := os.Stat(db.Path() + suffix)
		if err != nil {
			t.Errorf("stat %s: %v", suffix, err)
			continue
		}
		if got := fi.Mode().Perm(); got != 0o600 {
			t.Errorf("mode of %s%s: got %#o, want 0600", db.Path(), suffix, got)
		}
	}
}

func TestPragmas(t *testing.T) {
	db := openTest(t)
	migs, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		writer bool
		name   string
		want   int64
	}{
		{true, "application_id", ApplicationID},
		{true, "user_version", int64(len(migs))},
		{true, "synchronous", 2}, // FULL
		{true, "foreign_keys", 1},
		{true, "busy_timeout", busyTimeoutMS},
		{false, "query_only", 1},
	} {
		var got int64
		q := "SELECT * FROM pragma_" + tc.name
		if tc.writer {
			onWriter(t, db, func(ctx context.Context, c *sql.Conn) error { return c.QueryRowContext(ctx, q).Scan(&got) })
		} else if err := db.r.QueryRow(q).Scan(&got); err != nil {
			t.Fatalf("pragma %s: %v", tc.name, err)
		}
		if got != tc.want {
			t.Errorf("pragma %s: got %d, want %d", tc.name, got, tc.want)
		}
	}
	var mode string
	if err := db.r.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode: got %q, %v; want wal", mode, err)
	}
}

// TestInboxUsesPartialIndex guards the property that keeps Take, Unread and
// the lease sweeps fast with millions of read deliveries.
func TestInboxUsesPartialIndex(t *testing.T) {
	db := openTest(t)
	for _, q := range []string{
		`SELECT count(*) FROM deliveries WHERE workspace = 'w' AND recipient = 'r' AND read_at IS NULL AND reader IS NULL AND rank <= 3`,
		`SELECT recipient, count(*) FROM deliveries WHERE workspace = 'w' AND read_at IS NULL AND reader IS NULL AND rank <= 3 GROUP BY recipient`,
		`SELECT d.id, ` + delCols + `, ` + msgCols + ` ` + strings.NewReplacer("?1", "'w'", "?2", "'r'", "?3", "3", "?4", "10", "?5", "''", "?6", "''").Replace(inboxFrom),
		`SELECT d.id, ` + delCols + `, ` + msgCols + ` ` + strings.NewReplacer("?1", "'w'", "?2", "'r'", "?3", "3", "?4", "10", "?5", "'t'", "?6", "'m'").Replace(inboxFrom),
	} {
		rows, err := db.r.Query("EXPLAIN QUERY PLAN " + q)
		if err != nil {
			t.Fatalf("explain: %v", err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		p := strings.Join(plan, "; ")
		if !strings.Contains(p, "deliveries_inbox") || strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("plan for %q: got %q, want a search of deliveries_inbox with no sort", q, p)
		}
	}
}

// TestOpenRefuses checks files Open must refuse, leaving them byte-identical.
func TestOpenRefuses(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		prepare func(t *testing.T, path string)
		want    []string // substrings of the error
	}{
		{"not SQLite", func(t *testing.T, path string) {
			writeFile(t, path, []byte("# my notes\nnot a database at all, but long enough to have a header...........\n"))
		}, []string{"is not a Parley database", "not an SQLite file"}},
		{"short file", func(t *testing.T, path string) {
			writeFile(t, path, []byte("hi"))
		}, []string{"is not a Parley database"}},
		{"foreign SQLite", func(t *testing.T, path string) {
			raw, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			if _, err := raw.Exec(`CREATE TABLE recipes (name TEXT); INSERT INTO recipes VALUES ('soup')`); err != nil {
				t.Fatal(err)
			}
		}, []string{"is not a Parley database", "another application"}},
		{"foreign application_id", func(t *testing.T, path string) {
			raw, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			if _, err := raw.Exec(`PRAGMA application_id = 1234; CREATE TABLE t (x)`); err != nil {
				t.Fatal(err)
			}
		}, []string{"is not a Parley database", "0x4d2"}},
		{"corrupt", func(t *testing.T, path string) {
			makeParleyDB(t, path)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) < 8192 {
				t.Fatalf("database too small to corrupt: %d bytes", len(b))
			}
			// Keep the header page; scribble over the pages after it.
			for i := 4096; i < len(b); i++ {
				b[i] = byte(i*7 + 3)
			}
			writeFile(t, path, b)
		}, []string{"is corrupt"}},
		{"truncated", func(t *testing.T, path string) {
			makeParleyDB(t, path)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, path, b[:len(b)/2])
		}, []string{"is corrupt"}},
		{"newer schema", func(t *testing.T, path string) {
			makeParleyDB(t, path)
			raw, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			if _, err := raw.Exec(`PRAGMA user_version = 99`); err != nil {
				t.Fatal(err)
			}
		}, []string{"schema version 99", "upgrade parley"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "parley.db")
			tt.prepare(t, path)
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			db, err := Open(ctx, path, nil)
			if err == nil {
				db.Close()
				t.Fatalf("Open: got no error, want one")
			}
			t.Logf("Open: %v", err)
			msg := err.Error()
			if !strings.Contains(msg, path) {
				t.Errorf("Open error %q does not name the path %s", msg, path)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("Open error: got %q, want it to contain %q", msg, w)
				}
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Errorf("Open modified the refused file (%d bytes before, %d after)", len(before), len(after))
			}
			for _, suffix := range []string{"-wal", "-shm", "-journal"} {
				if _, err := os.Stat(path + suffix); err == nil {
					t.Errorf("Open left a %s file next to the refused database", suffix)
				}
			}
		})
	}
}

func TestOpenAdoptsEmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "parley.db")
	writeFile(t, path, nil)
	db, err := Open(context.Background(), path, nil)
	if err != nil {
		t.Fatalf("Open(empty file): %v", err)
	}
	db.Close()
}

func TestOpenMissingDir(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "dir", "parley.db")
	_, err := Open(context.Background(), path, nil)
	if err == nil || !strings.Contains(err.Error(), "open store") {
		t.Errorf("Open in a missing directory: got %v, want an open store error", err)
	}
}

func TestErrorKinds(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, _, err := db.Take(cctx, hub.TakeQuery{Workspace: "ws", Recipient: "bob", MaxRank: 3, Limit: 1})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Consume(cancelled): got %v, want context.Canceled in the chain", err)
	}
	_, err = db.Agent(ctx, "ws", "nobody")
	if !hub.IsNotFound(err) {
		t.Errorf("Agent(nobody): got %v, want NotFound", err)
	}
}

func TestDiskFullKind(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	// Cap the file at its current size: the next write that needs a page fails
	// with SQLITE_FULL, as on a full disk.
	onWriter(t, db, func(ctx context.Context, c *sql.Conn) error {
		var pages int
		if err := c.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
			return err
		}
		_, err := c.ExecContext(ctx, "PRAGMA max_page_count = "+strconv.Itoa(pages))
		return err
	})
	big := strings.Repeat("x", 64<<10)
	m := &hub.Message{ID: "01J00000000000000000000BIG", Workspace: "ws", From: "a", To: "b", Content: big, Priority: hub.Normal, CreatedAt: time.Now()}
	err := db.CreateMessage(ctx, m, []string{"b"})
	if hub.KindOf(err) != hub.Unavailable || !strings.Contains(err.Error(), "database or disk is full") {
		t.Errorf("CreateMessage on a full database: got %v (kind %s), want unavailable: database or disk is full", err, hub.KindOf(err))
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// makeParleyDB creates a closed Parley database at path with some rows in it.
func makeParleyDB(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	db, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	for i := range 200 {
		id := "01J0000000000000000000" + strconv.Itoa(1000+i)
		m := &hub.Message{ID: id, Workspace: "ws", From: "a", To: "b", Content: strings.Repeat("content ", 20), Priority: hub.Normal, CreatedAt: time.Now()}
		if err := db.CreateMessage(ctx, m, []string{"b", "c"}); err != nil {
			t.Fatalf("CreateMessage: %v", err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// TestGroupCommit queues writes behind a blocked writer so that they share one
// transaction, some of them failing, and checks that exactly the writes that
// reported success were kept.
func TestGroupCommit(t *testing.T) {
	for _, tc := range []struct {
		name string
		full bool // cap the file so that large writes fail with SQLITE_FULL
	}{
		{"conflicts", false},
		{"disk full", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db := openTest(t)
			if err := db.CreateGroup(ctx, &hub.Group{Workspace: "ws", Name: "taken"}); err != nil {
				t.Fatal(err)
			}
			if tc.full {
				onWriter(t, db, func(ctx context.Context, c *sql.Conn) error {
					var pages int
					if err := c.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
						return err
					}
					_, err := c.ExecContext(ctx, "PRAGMA max_page_count = "+strconv.Itoa(pages+2))
					return err
				})
			}
			release := make(chan struct{})
			blocked := make(chan struct{})
			go db.wr.do(ctx, false, func(context.Context, *sql.Conn) error {
				close(blocked)
				<-release
				return nil
			})
			<-blocked
			before := db.wr.commits.Load()

			const n = 24
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					switch i % 3 {
					case 0: // conflicts with the existing group
						errs[i] = db.CreateGroup(ctx, &hub.Group{Workspace: "ws", Name: "taken"})
					case 1:
						content := "small"
						if tc.full && i%2 == 1 {
							content = strings.Repeat("big ", 8<<10)
						}
						errs[i] = db.CreateMessage(ctx, &hub.Message{ID: "01JGC" + strconv.Itoa(1000+i), Workspace: "ws",
							From: "a", To: "b", Content: content, Priority: hub.Normal, CreatedAt: time.Now()}, []string{"b"})
					case 2:
						errs[i] = db.CreateGroup(ctx, &hub.Group{Workspace: "ws", Name: "g" + strconv.Itoa(i)})
					}
				})
			}
			time.Sleep(100 * time.Millisecond) // let the writes queue up
			close(release)
			wg.Wait()
			t.Logf("%d writes in %d commits", n, db.wr.commits.Load()-before)
			failed := 0
			for _, err := range errs {
				if err != nil && hub.KindOf(err) != hub.Conflict {
					failed++
				}
			}
			if tc.full && failed == 0 {
				t.Errorf("no write failed on a full database; the test did not test anything")
			}

			for i, err := range errs {
				var kept bool
				switch i % 3 {
				case 0:
					wantKind(t, "CreateGroup(taken)", err, hub.Conflict)
					continue
				case 1:
					_, gerr := db.Message(ctx, "ws", "01JGC"+strconv.Itoa(1000+i))
					kept = gerr == nil
				case 2:
					_, gerr := db.Group(ctx, "ws", "g"+strconv.Itoa(i))
					kept = gerr == nil
				}
				if kept != (err == nil) {
					t.Errorf("write %d: got error %v and kept=%v; a write must be kept exactly when it succeeds", i, err, kept)
				}
				if tc.full && err != nil && hub.KindOf(err) != hub.Unavailable {
					t.Errorf("write %d: got %v (kind %s), want unavailable", i, err, hub.KindOf(err))
				}
				if !tc.full && err != nil {
					t.Errorf("write %d: %v", i, err)
				}
			}
			// The batch owed search exactly the kept messages: a search
			// pays for them and finds them, and nothing is left queued.
			kept := 0
			for i, err := range errs {
				if i%3 == 1 && err == nil {
					kept++
				}
			}
			if got := searchCount(t, db, "ws", "small") + searchCount(t, db, "ws", "big"); got != kept {
				t.Errorf("search after the group commit: got %d hits, want the %d kept messages", got, kept)
			}
			var queued int
			if err := db.r.QueryRowContext(ctx, "SELECT count(*) FROM search_pending").Scan(&queued); err != nil || queued != 0 {
				t.Errorf("search_pending after commit: %d rows (%v), want 0", queued, err)
			}
			if tc.full {
				execWriter(t, db, "PRAGMA max_page_count = 1073741823")
			}
			ftsIntegrity(t, db)
		})
	}
}

// TestSearchFollowsEdits: a message already indexed, and one still owed to
// the index, can each be edited and deleted in later transactions; one
// stored and deleted within one transaction never reaches the indexes; the
// indexes stay consistent throughout. In a synctest bubble the writer's idle
// indexing runs only when the test waits, so which messages are owed is
// known.
func TestSearchFollowsEdits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		db := openTest(t)
		send := func(id, content string) {
			t.Helper()
			if err := db.CreateMessage(ctx, &hub.Message{ID: id, Workspace: "ws", From: "a", To: "b",
				Content: content, Priority: hub.Normal, CreatedAt: time.Now()}, nil); err != nil {
				t.Fatal(err)
			}
		}
		send("01JIX0", "alpha one")
		send("01JIX1", "alpha two")
		if got := searchCount(t, db, "ws", "alpha"); got != 2 {
			t.Fatalf("search alpha: got %d hits, want 2", got)
		}
		send("01JIX2", "delta one")
		send("01JIX3", "delta two")
		if n := db.wr.owed.Load(); n != 2 {
			t.Fatalf("owed before the edits: got %d, want 2", n)
		}
		onWriter(t, db, func(ctx context.Context, c *sql.Conn) error {
			for _, q := range []string{
				`UPDATE messages SET content = 'beta two' WHERE id = '01JIX1'`,
				`DELETE FROM messages WHERE id = '01JIX0'`,
				`UPDATE messages SET content = 'epsilon two' WHERE id = '01JIX3'`,
				`DELETE FROM messages WHERE id = '01JIX2'`,
			} {
				if _, err := c.ExecContext(ctx, q); err != nil {
					return err
				}
			}
			return nil
		})
		if n := db.wr.owed.Load(); n != 2 {
			t.Errorf("owed after the edits: got %d, want 2 (the edited messages)", n)
		}
		ftsIntegrity(t, db)
		// Stored and deleted before the commit that would have indexed it.
		err := db.write(ctx, "test", func(ctx context.Context, c *sql.Conn) error {
			if _, err := c.ExecContext(ctx, `INSERT INTO messages (id, workspace, sender, to_addr, content, priority, created_at)
				VALUES ('01JIX9', 'ws', 'a', 'b', 'gamma', 'normal', 1)`); err != nil {
				return err
			}
			_, err := c.ExecContext(ctx, `DELETE FROM messages WHERE id = '01JIX9'`)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if n := db.wr.owed.Load(); n != 0 {
			t.Errorf("owed after a message stored and deleted in one transaction: got %d, want 0", n)
		}
		ftsIntegrity(t, db)
		for q, want := range map[string]int{"alpha": 0, "beta": 1, "gamma": 0, "delta": 0, "epsilon": 1} {
			if got := searchCount(t, db, "ws", q); got != want {
				t.Errorf("search %s: got %d hits, want %d", q, got, want)
			}
		}
	})
}

func wantKind(t *testing.T, what string, err error, want hub.Kind) {
	t.Helper()
	if got := hub.KindOf(err); err == nil || got != want {
		t.Errorf("%s: got %v (kind %s), want a %s error", what, err, got, want)
	}
}

// TestLazyWritesRestoreSync: a batch of lazy writes (read marks) commits
// without a sync, and the connection is back to synchronous=FULL afterwards,
// so the next send is synced.
func TestLazyWritesRestoreSync(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.CreateMessage(ctx, &hub.Message{ID: "m1", Workspace: "w", From: "a", To: "b", Content: "x", Priority: hub.Normal, ThreadID: "m1"}, []string{"b"}); err != nil {
		t.Fatal(err)
	}
	if ms, _, err := db.Take(ctx, hub.TakeQuery{Workspace: "w", Recipient: "b", MaxRank: 3, Limit: 1}); err != nil || len(ms) != 1 {
		t.Fatalf("consume: %v %v", ms, err)
	}
	var mode int
	err = db.wr.do(ctx, false, func(ctx context.Context, c *sql.Conn) error {
		return c.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&mode)
	})
	if err != nil || mode != 2 {
		t.Errorf("synchronous after a lazy write: got %d (%v), want 2 (FULL)", mode, err)
	}
	// The read mark survives a reopen (a process exit, not a power cut).
	db.Close()
	db, err = Open(ctx, db.Path(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n, _ := db.Unread(ctx, "w", "b", 3); n != 0 {
		t.Errorf("unread after reopen: got %d, want 0", n)
	}
}

// TestExpiryIndexOnlyOutOfOrder: a queued message with the default time to
// live, whose expiry comes after every earlier one's, and a message handed
// at once to its one recipient's waiting reader leave the expiry index
// alone (a page of every send's commit); a shorter time to live after a
// longer one, and a time to live past the default, are in it. All of them
// are reported when their time comes, across a reopen, and so is a message
// that reuses the seq of a purged one the cursor has passed.
func TestExpiryIndexOnlyOutOfOrder(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "parley.db")
	db, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Close()
		checkIntegrity(t, path)
	})
	t0 := time.Now().UTC()
	n := 0
	send := func(ttl time.Duration, handed bool) *hub.Message {
		n++
		id := fmt.Sprintf("01JEXPIRY%017d", n)
		created := t0.Add(time.Duration(n) * time.Millisecond)
		m := &hub.Message{ID: id, ThreadID: id, Workspace: "w", From: "a", To: "b", Content: "x", Priority: hub.Normal,
			CreatedAt: created, ExpiresAt: created.Add(ttl)}
		var hs []hub.Handoff
		if handed {
			hs = []hub.Handoff{{Recipient: "b", Reader: "r" + id, Now: created, LeaseUntil: created.Add(time.Minute), Via: hub.WakeWait}}
		}
		if err := db.CreateMessage(ctx, m, []string{"b"}, hs...); err != nil {
			t.Fatal(err)
		}
		return m
	}
	indexed := func() int {
		var k int
		if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM messages INDEXED BY messages_expiry_due
			WHERE expires_at > 0 AND expiry_reported = 0`).Scan(&k); err != nil {
			t.Fatal(err)
		}
		return k
	}
	due := func(at time.Time, want ...*hub.Message) {
		t.Helper()
		ds, err := db.DueExpiries(ctx, at)
		if err != nil {
			t.Fatal(err)
		}
		var got, ids []string
		for _, d := range ds {
			got = append(got, d.MessageID)
		}
		for _, m := range want {
			ids = append(ids, m.ID)
		}
		slices.Sort(got)
		slices.Sort(ids)
		if !slices.Equal(got, ids) {
			t.Errorf("due at +%s: %v, want %v", at.Sub(t0), got, ids)
		}
	}

	day := hub.DefaultTTL
	d1 := send(day, false)
	send(day, true)
	d2 := send(day, false)
	if k := indexed(); k != 0 {
		t.Errorf("queued and handed messages of the default time to live: %d in the expiry index, want 0", k)
	}
	short := send(time.Hour, false)
	long := send(2*day, false)
	if k := indexed(); k != 2 {
		t.Errorf("a shorter time to live after a longer one, and one past the default: %d in the expiry index, want 2", k)
	}
	due(short.ExpiresAt, short)
	due(d1.ExpiresAt, d1)

	// The cursor is kept: after a reopen, d2 is reported once, and a
	// message expiring before d2 still goes to the index.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = Open(ctx, path, nil); err != nil {
		t.Fatal(err)
	}
	before := send(day-time.Hour, false)
	if k := indexed(); k != 2 { // long and before
		t.Errorf("after reopen: %d in the expiry index, want 2", k)
	}
	due(d2.ExpiresAt, before, d2)
	due(d2.ExpiresAt.Add(time.Hour))

	// The newest messages purged, the next insert may reuse a seq the
	// cursor has passed: that message is found through the index.
	d3 := send(day, false)
	due(d3.ExpiresAt, d3)
	execWriter(t, db, `DELETE FROM deliveries WHERE message_seq >= (SELECT seq FROM messages WHERE id = ?)`, d3.ID)
	execWriter(t, db, `DELETE FROM messages WHERE seq >= (SELECT seq FROM messages WHERE id = ?)`, d3.ID)
	reused := send(day, false)
	var seq, cursor int64
	if err := db.r.QueryRowContext(ctx, `SELECT (SELECT seq FROM messages WHERE id = ?), (SELECT seq FROM expiry_cursor)`, reused.ID).Scan(&seq, &cursor); err != nil {
		t.Fatal(err)
	}
	if seq > cursor {
		t.Fatalf("seq %d was not reused (cursor at %d): the test does not test what it says", seq, cursor)
	}
	due(reused.ExpiresAt, reused)
	due(long.ExpiresAt, long)
}
