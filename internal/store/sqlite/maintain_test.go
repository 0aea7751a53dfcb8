package sqlite

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// fill adds n messages of size bytes, each with one read delivery, to the
// Parley database at path, in one transaction of raw SQL (fast enough to
// build hundreds of megabytes).
func fill(t testing.TB, path string, n, size int) {
	t.Helper()
	db, err := Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	raw, err := sql.Open("sqlite", dsn(path, "_pragma=journal_mode(WAL)", "_pragma=synchronous(OFF)"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	now := time.Now().UnixNano()
	_, err = raw.Exec(`BEGIN;
		WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < ?1)
		INSERT INTO messages (id, workspace, sender, to_addr, content, priority, created_at)
		SELECT printf('01K%023d', x), 'ws', 'a', 'b', substr(hex(randomblob(?2)), 1, ?2), 'normal', ?3 + x FROM i;
		INSERT INTO deliveries (workspace, recipient, message_seq, rank, read_at) SELECT 'ws', 'b', seq, 2, ?3 FROM messages;
		INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');
		INSERT INTO messages_words (messages_words) VALUES ('rebuild');
		DELETE FROM search_pending;
		COMMIT`, n, size, now)
	if err != nil {
		t.Fatal(err)
	}
	// Leave a clean file behind, as a stopped daemon does.
	if _, err := raw.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
}

// readBytes is what this process has read through read(2) and its kin so
// far, page cache or not (Linux's rchar).
func readBytes(t testing.TB) int64 {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		t.Skipf("no /proc/self/io to count reads: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "rchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Skip("no rchar in /proc/self/io")
	return 0
}

// TestOpenCheckIsBounded: reopening a large database reads a bounded part of
// it. PRAGMA quick_check read all of it (a 5 s restart over 1M messages).
func TestOpenCheckIsBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "parley.db")
	fill(t, path, 3000, 4000)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	before := readBytes(t)
	db, err := Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	read := readBytes(t) - before
	db.Close()
	t.Logf("file %d bytes, Open read %d bytes", st.Size(), read)
	if read > st.Size()/10 {
		t.Errorf("Open read %d bytes of a %d-byte database: want a bounded check, not the whole file", read, st.Size())
	}
	// The full check finds it healthy.
	db, _ = Open(context.Background(), path, nil)
	defer db.Close()
	if problems, err := db.Check(context.Background()); err != nil || len(problems) != 0 {
		t.Errorf("Check: %v %v", problems, err)
	}
}

// TestCheckFindsDamageOpenLetsThrough: damage deep in a table that the
// bounded start-up check does not read is what Check (doctor) is for.
func TestCheckFindsDamage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "parley.db")
	fill(t, path, 2000, 2000)
	// Scribble over a leaf of the messages table in its middle, found by
	// dbstat: the middle of the file may be a free page or an overflow page's
	// payload, which no check can tell from data.
	raw, err := sql.Open("sqlite", dsn(path))
	if err != nil {
		t.Fatal(err)
	}
	var page, size int64
	err = raw.QueryRow(`SELECT pageno, pgsize FROM dbstat WHERE name = 'messages' AND pagetype = 'leaf'
		ORDER BY pageno LIMIT 1 OFFSET (SELECT count(*) / 2 FROM dbstat WHERE name = 'messages' AND pagetype = 'leaf')`).Scan(&page, &size)
	raw.Close()
	if err != nil {
		t.Fatalf("find a leaf page of messages: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	off := (page - 1) * size
	for i := off; i < off+size; i++ {
		b[i] = 0xAA
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := Open(context.Background(), path, nil)
	if err != nil {
		t.Skipf("the damage hit a page the bounded check reads: %v", err)
	}
	defer db.Close()
	problems, err := db.Check(context.Background())
	if err == nil && len(problems) == 0 {
		t.Error("Check: found nothing in a damaged database")
	}
}

func TestPurge(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	old := time.Now().Add(-48 * time.Hour)
	add := func(id string, at time.Time, to ...string) {
		t.Helper()
		// Metadata and a payload: search indexes them, and a purge must take
		// them out of its index too.
		m := &hub.Message{ID: id, Workspace: "ws", From: "a", To: to[0], Content: "x", Priority: hub.Normal, CreatedAt: at,
			Metadata: map[string]string{"k": "needle"}, Payload: []byte(`{"p":"haystack"}`)}
		if err := db.CreateMessage(ctx, m, to); err != nil {
			t.Fatal(err)
		}
	}
	// Old and read by all, more than a batch of them: purged.
	for i := range purgeBatch + 7 {
		add(fmt.Sprintf("01K%023d", i), old, "b", "c")
	}
	if _, err := db.ClearInbox(ctx, "ws", "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ClearInbox(ctx, "ws", "c"); err != nil {
		t.Fatal(err)
	}
	// Old but unread by d (read by b): kept, however old.
	add("01KOLDUNREAD00000000000000", old, "b", "d")
	db.ClearInbox(ctx, "ws", "b")
	// New and read: kept.
	add("01KNEWREAD0000000000000000", time.Now(), "b")
	db.ClearInbox(ctx, "ws", "b")

	res, err := db.Purge(ctx, hub.PurgeQuery{Before: time.Now().Add(-24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if want := (hub.PurgeResult{Messages: purgeBatch + 7, Deliveries: 2 * (purgeBatch + 7)}); res != want {
		t.Errorf("Purge: got %+v, want %+v", res, want)
	}
	for _, id := range []string{"01KOLDUNREAD00000000000000", "01KNEWREAD0000000000000000"} {
		if _, err := db.Message(ctx, "ws", id); err != nil {
			t.Errorf("message %s: %v, want it kept", id, err)
		}
	}
	if _, err := db.Message(ctx, "ws", fmt.Sprintf("01K%023d", 0)); hub.KindOf(err) != hub.NotFound {
		t.Errorf("an old read message: got %v, want it purged", err)
	}
	if n, _ := db.Unread(ctx, "ws", "d", 3); n != 1 {
		t.Errorf("d's unread: got %d, want 1", n)
	}
	var left int
	db.r.QueryRow(`SELECT count(*) FROM deliveries`).Scan(&left)
	if left != 3 {
		t.Errorf("deliveries left: got %d, want 3", left)
	}
	var indexed int
	if err := db.wr.payDebt(ctx); err != nil { // what the writer has not indexed yet
		t.Fatal(err)
	}
	if err := db.r.QueryRow(`SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'needle'`).Scan(&indexed); err != nil || indexed != 2 {
		t.Errorf("search index after the purge: %d matches (%v), want the 2 kept messages", indexed, err)
	}
	// Again: nothing more to do.
	if res, err := db.Purge(ctx, hub.PurgeQuery{Before: time.Now().Add(-24 * time.Hour)}); err != nil || res != (hub.PurgeResult{}) {
		t.Errorf("second Purge: got %+v %v", res, err)
	}
}

func TestBackup(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := Open(ctx, filepath.Join(dir, "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range 50 {
		m := &hub.Message{ID: fmt.Sprintf("01K%023d", i), Workspace: "ws", From: "a", To: "b", Content: "hello", Priority: hub.Normal, CreatedAt: time.Now()}
		if err := db.CreateMessage(ctx, m, []string{"b"}); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "backup.db")
	if err := db.Backup(ctx, out); err != nil {
		t.Fatal(err)
	}
	// The copy is a Parley database with the messages.
	cp, err := Open(ctx, out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := cp.Unread(ctx, "ws", "b", 3); n != 50 {
		t.Errorf("backup: got %d unread, want 50", n)
	}
	cp.Close()
	// Never over an existing file, nor a relative path.
	if err := db.Backup(ctx, out); hub.KindOf(err) != hub.Conflict {
		t.Errorf("backup over an existing file: got %v, want a conflict", err)
	}
	if err := db.Backup(ctx, "rel.db"); hub.KindOf(err) != hub.Invalid {
		t.Errorf("relative path: got %v", err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("left a temporary file: %s", e.Name())
		}
	}
	if err := db.Backup(ctx, filepath.Join(dir, "no", "such", "dir.db")); err == nil || errors.Is(err, os.ErrExist) {
		t.Errorf("backup into a missing directory: got %v", err)
	}
}

// BenchmarkReopen measures Open over a large database, the start-up path of
// a daemon restart. PARLEY_BENCH_MESSAGES sets the size (default 100,000;
// the figure is 1,000,000 messages, ~400 MB).
func BenchmarkReopen(b *testing.B) {
	n := 100_000
	if v := os.Getenv("PARLEY_BENCH_MESSAGES"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	path := filepath.Join(b.TempDir(), "parley.db")
	fill(b, path, n, 200)
	st, _ := os.Stat(path)
	for b.Loop() {
		db, err := Open(context.Background(), path, nil)
		if err != nil {
			b.Fatal(err)
		}
		db.Close()
	}
	b.ReportMetric(float64(st.Size())/1e6, "MB")
}

func TestVerify(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	fill(t, good, 50, 100)
	if err := Verify(ctx, good, true); err != nil {
		t.Errorf("a healthy database: %v", err)
	}
	mk := func(name string, prep func(raw *sql.DB)) string {
		path := filepath.Join(dir, name)
		raw, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		prep(raw)
		raw.Close()
		return path
	}
	newer := filepath.Join(dir, "newer.db")
	fill(t, newer, 1, 10)
	mk("newer.db", func(raw *sql.DB) { raw.Exec(`PRAGMA user_version = 999`) })
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("just some notes, long enough to have a header of sorts...."), 0o600)
	b, _ := os.ReadFile(good)
	cut := filepath.Join(dir, "cut.db")
	os.WriteFile(cut, b[:len(b)/2], 0o600)
	for _, tt := range []struct{ name, path, want string }{
		{"foreign", mk("recipes.db", func(raw *sql.DB) { raw.Exec(`CREATE TABLE recipes (name TEXT)`) }), "another application"},
		{"empty SQLite", mk("empty.db", func(raw *sql.DB) { raw.Exec(`PRAGMA user_version = 0; CREATE TABLE x (y); DROP TABLE x`) }), "not a Parley database"},
		{"newer", newer, "newer than this parley"},
		{"text", text, "not an SQLite file"},
		{"cut short", cut, "corrupt"},
		{"missing", filepath.Join(dir, "nope.db"), "no such file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := Verify(ctx, tt.path, true); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// TestVerifyMidCheckpoint: a daemon killed during a checkpoint leaves a
// header that records more pages than the file has, beside a log that holds
// them. That database is whole: it opens, and nothing in it is lost.
func TestVerifyMidCheckpoint(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	live := filepath.Join(dir, "live.db")
	fill(t, live, 10, 100)
	raw, err := sql.Open("sqlite", dsn(live, "_pragma=journal_mode(WAL)", "_pragma=wal_autocheckpoint(0)"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	// Grow the database in the log only, then copy the files as a kill -9
	// leaves them.
	if _, err := raw.Exec(`INSERT INTO messages (id, workspace, sender, to_addr, content, priority, created_at)
		SELECT 'x' || id, workspace, sender, to_addr, hex(randomblob(4000)), priority, created_at FROM messages`); err != nil {
		t.Fatal(err)
	}
	crashed := filepath.Join(dir, "crashed.db")
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(live + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if suffix == "" {
			// The checkpoint had written page 1, whose header counts the
			// pages still to come.
			binary.BigEndian.PutUint32(b[28:32], binary.BigEndian.Uint32(b[28:32])+40)
		}
		if err := os.WriteFile(crashed+suffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := Verify(ctx, crashed, true); err != nil {
		t.Fatalf("a database mid-checkpoint: %v", err)
	}
	db, err := Open(ctx, crashed, nil)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer db.Close()
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM messages`).Scan(&n); err != nil || n != 20 {
		t.Errorf("messages after recovery: %d, %v; want 20", n, err)
	}
}
