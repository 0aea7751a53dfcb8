// Package sqlite keeps the hub's state in one SQLite file ($PARLEY_HOME/parley.db),
// implementing hub.Store on the pure-Go modernc.org/sqlite driver.
//
// It owns the schema, its embedded migrations and the connection discipline: one
// writer connection that every write goes through (so writes never contend for
// SQLite's lock inside the process, and Consume is atomic), and a pool of read-only
// connections that WAL lets run beside it. The daemon imports it to build the
// store it hands to the hub; nothing else of Parley's should.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/parley-dev/parley/internal/hub"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// ApplicationID is stamped in the database header (PRAGMA application_id) so that a
// Parley database can be told from any other SQLite file: "PRLY".
const ApplicationID = 0x50524C59

// busyTimeoutMS is how long a connection waits for another process's lock (a second
// daemon, the sqlite3 shell) before it gives up with SQLITE_BUSY.
const busyTimeoutMS = 5000

//go:embed migrations/*.sql
var migrationFS embed.FS

// Options configures Open. A nil *Options means the defaults.
type Options struct {
	// Logger receives the store's few log lines (migrations, slow opens);
	// nil discards them.
	Logger *slog.Logger
	// ReadConns bounds the read pool; 0 means max(4, GOMAXPROCS).
	ReadConns int

	// synchronous overrides PRAGMA synchronous; tests use it to measure what
	// FULL costs. Empty means FULL.
	synchronous string
}

// DB is a hub.Store backed by a SQLite file. Its methods are safe for concurrent use.
type DB struct {
	path string
	log  *slog.Logger
	w    *sql.DB // holds the one writer connection, which wr owns
	wr   *writer
	r    *sql.DB // read-only pool

	closeOnce sync.Once
	closeErr  error

	stmts       statements
	searchStmts sync.Map // query -> *sql.Stmt on r (search.go)

	// known holds workspaces already recorded in the workspaces table, so the hot
	// write paths skip the INSERT OR IGNORE once a workspace has been seen.
	known sync.Map // string -> struct{}

	expiry expiry // expiry.go
}

var _ hub.Store = (*DB)(nil)

// Open opens the Parley database at path, creating it (mode 0600) if it does not
// exist, and brings its schema up to date. It refuses, without touching the file,
// a file that is not SQLite, an SQLite database of another application, a corrupt
// database, and a database written by a newer Parley.
func Open(ctx context.Context, path string, opts *Options) (*DB, error) {
	if opts == nil {
		opts = &Options{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	migs, err := loadMigrations()
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if err := prepareFile(ctx, path, len(migs)); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}

	syncMode := opts.synchronous
	if syncMode == "" {
		syncMode = "FULL"
	}
	// _txlock=immediate: every write transaction takes SQLite's write lock at
	// BEGIN, so a transaction that reads and then writes (Consume) cannot fail
	// half-way with SQLITE_BUSY when another process holds the lock.
	w, err := sql.Open("sqlite", dsn(path,
		"_pragma=busy_timeout("+fmt.Sprint(busyTimeoutMS)+")",
		"_pragma=foreign_keys(1)",
		"_pragma=journal_mode(WAL)",
		"_pragma=synchronous("+syncMode+")",
		// Statement journals (multi-row inserts, the savepoints of group
		// commit) spill to temporary files past 64 KiB: a broadcast to a
		// thousand agents went from 22 ms to under 5 with this.
		"_pragma=temp_store(MEMORY)",
		"_txlock=immediate",
	))
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)

	db := &DB{path: path, log: log, w: w}
	conn, err := w.Conn(ctx)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open store: %w", db.mapErr(ctx, "connect", err))
	}
	if err := db.migrate(ctx, conn, migs); err != nil {
		conn.Close()
		w.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}

	n := opts.ReadConns
	if n <= 0 {
		n = max(4, runtime.GOMAXPROCS(0))
	}
	r, err := sql.Open("sqlite", dsn(path,
		"_pragma=busy_timeout("+fmt.Sprint(busyTimeoutMS)+")",
		"_pragma=query_only(1)",
		"_pragma=temp_store(MEMORY)",
	))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	r.SetConnMaxLifetime(0)
	r.SetConnMaxIdleTime(0)
	db.r = r

	if err := db.stmts.prepare(ctx, conn, r); err != nil {
		db.stmts.close()
		conn.Close()
		r.Close()
		w.Close()
		return nil, fmt.Errorf("open store: %w", db.mapErr(ctx, "prepare", err))
	}
	if err := db.expiry.load(ctx, conn); err != nil {
		db.stmts.close()
		conn.Close()
		r.Close()
		w.Close()
		return nil, fmt.Errorf("open store: %w", db.mapErr(ctx, "expiry cursor", err))
	}
	if db.wr, err = newWriter(conn, strings.ToUpper(syncMode), db.searchDebt, db.indexPending); err != nil {
		db.stmts.close()
		conn.Close()
		r.Close()
		w.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	// A crash (or a power cut) may have left messages owed to search. A
	// failure here does not keep the store shut: the messages stay queued,
	// and the next search reports it.
	if err := db.wr.payDebt(ctx); err != nil {
		log.Warn("index messages for search", "path", path, "err", err)
	}
	return db, nil
}

// Close waits for writes under way, then closes the database; the last
// connection to go checkpoints the WAL. Closing twice is harmless.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		db.wr.close()
		db.stmts.close()
		db.searchStmts.Range(func(_, st any) bool {
			st.(*sql.Stmt).Close()
			return true
		})
		err := errors.Join(db.wr.conn.Close(), db.r.Close(), db.w.Close())
		if err != nil {
			db.closeErr = fmt.Errorf("close store: %w", err)
		}
	})
	return db.closeErr
}

// write runs fn through the writer (see writer.do) and maps its error for op.
func (db *DB) write(ctx context.Context, op string, fn func(ctx context.Context, c *sql.Conn) error) error {
	return db.writeMode(ctx, op, false, fn)
}

// writeLazy is write for state whose loss in a power cut (not a crash: a
// killed process loses nothing) is harmless: read marks and last-seen times.
// Such a commit skips the fsync that synchronous=FULL would cost, which takes
// one fsync off every wake-up (a send is synced; its consume need not be). At
// worst a power cut re-delivers a message that was read: never loses one.
// A lazy write must not store or change messages: a transaction of lazy
// writes only does not count what it owes search (writer.finish).
func (db *DB) writeLazy(ctx context.Context, op string, fn func(ctx context.Context, c *sql.Conn) error) error {
	return db.writeMode(ctx, op, true, fn)
}

func (db *DB) writeMode(ctx context.Context, op string, lazy bool, fn func(ctx context.Context, c *sql.Conn) error) error {
	return db.writeErr(ctx, op, db.wr.do(ctx, lazy, fn))
}

// writeErr maps the error of a write through the writer for op.
func (db *DB) writeErr(ctx context.Context, op string, err error) error {
	if err == errClosed {
		return hub.Errorf(op, hub.Unavailable, "%s: %w", db.path, err)
	}
	return db.mapErr(ctx, op, err)
}

// Path returns the database file's path.
func (db *DB) Path() string { return db.path }

// dsn builds a modernc DSN for path. The path is a URI (file:...) so that SQLite
// reads parameters such as mode=ro; characters that URIs give a meaning are escaped.
func dsn(path string, params ...string) string {
	r := strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23")
	return "file:" + r.Replace(path) + "?" + strings.Join(params, "&")
}

type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations returns the embedded migrations in order; file i (from 1) is
// schema version i.
func loadMigrations() ([]migration, error) {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	migs := make([]migration, 0, len(names))
	for i, name := range names {
		b, err := migrationFS.ReadFile(name)
		if err != nil {
			return nil, err
		}
		migs = append(migs, migration{version: i + 1, name: name, sql: string(b)})
	}
	return migs, nil
}

// sqliteMagic starts every SQLite database file.
const sqliteMagic = "SQLite format 3\x00"

// prepareFile makes sure path is either absent (then it creates it, 0600, empty),
// empty, or a healthy Parley database no newer than known schema versions. It
// never writes to an existing file: every check goes through a read-only handle.
func prepareFile(ctx context.Context, path string, known int) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		// A new file: SQLite will give its -wal and -shm files the same mode.
		return f.Close()
	}
	if !errors.Is(err, fs.ErrExist) {
		return err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("%s is a directory, not a Parley database", path)
	}
	walInfo, werr := os.Stat(path + "-wal")
	hasWAL := werr == nil
	if fi.Size() == 0 && (!hasWAL || walInfo.Size() == 0) {
		return nil // an empty file is an empty database; ours to initialise
	}
	_, jerr := os.Stat(path + "-journal")
	// Without a -wal or -journal file no connection has the database open in
	// WAL mode and there is nothing to recover, so the main file is the whole
	// database and the probe can read it as immutable: no locks, and no -wal or
	// -shm files created next to a file we may be about to refuse.
	immutable := !hasWAL && jerr != nil
	if fi.Size() > 0 {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		var hdr [len(sqliteMagic)]byte
		_, err = io.ReadFull(f, hdr[:])
		f.Close()
		if (err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF)) ||
			string(hdr[:]) != sqliteMagic {
			if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
				return err
			}
			return fmt.Errorf("%s is not a Parley database: it is not an SQLite file; it was left untouched (move it aside to start afresh)", path)
		}
	}
	return probe(ctx, path, known, immutable)
}

// probe inspects an existing SQLite file through a read-only connection.
func probe(ctx context.Context, path string, known int, immutable bool) error {
	// mode=ro: nothing this handle does can change the file, not even the
	// checkpoint SQLite runs when the last connection to a WAL database closes.
	params := []string{"mode=ro", "_pragma=busy_timeout(" + fmt.Sprint(busyTimeoutMS) + ")"}
	if immutable {
		params = append(params, "immutable=1")
	}
	p, err := sql.Open("sqlite", dsn(path, params...))
	if err != nil {
		return err
	}
	defer p.Close()
	p.SetMaxOpenConns(1)

	var appID, version, tables int
	err = p.QueryRowContext(ctx, `SELECT
		(SELECT application_id FROM pragma_application_id),
		(SELECT user_version FROM pragma_user_version),
		(SELECT count(*) FROM sqlite_schema)`).Scan(&appID, &version, &tables)
	if err != nil {
		return probeErr(path, err)
	}
	switch {
	case appID == 0 && tables == 0:
		return nil // an empty SQLite database; ours to initialise
	case appID != ApplicationID:
		return fmt.Errorf("%s is not a Parley database: it is an SQLite database of another application (application_id %#x, %d schema objects); it was left untouched", path, uint32(appID), tables)
	case version > known:
		return fmt.Errorf("%s has schema version %d, newer than this parley knows (%d): upgrade parley; the database was left untouched", path, version, known)
	}
	// Corruption surfaces here, with the path named, rather than later as a
	// failed send; boundedCheck does so at a cost that does not grow with
	// the file.
	return boundedCheck(ctx, p, path)
}

func probeErr(path string, err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_NOTADB:
			return fmt.Errorf("%s is not a Parley database: SQLite cannot read it (%w); it was left untouched", path, err)
		case sqlite3.SQLITE_CORRUPT:
			return fmt.Errorf("%s is corrupt (%w); it was left untouched: restore it from a backup or move it aside", path, err)
		}
	}
	return fmt.Errorf("check %s: %w", path, err)
}

// migrate applies the migrations the database lacks, each in its own transaction
// together with the user_version that records it.
func (db *DB) migrate(ctx context.Context, conn *sql.Conn, migs []migration) error {
	for _, m := range migs {
		done, err := db.applyMigration(ctx, conn, m, len(migs))
		if err != nil {
			return fmt.Errorf("migrate to schema version %d (%s): %w", m.version, m.name, db.mapErr(ctx, "migrate", err))
		}
		if done {
			db.log.Info("migrated database", "path", db.path, "version", m.version)
		}
	}
	return nil
}

func (db *DB) applyMigration(ctx context.Context, conn *sql.Conn, m migration, known int) (applied bool, err error) {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	// Read again under the write lock: another process may have migrated, or
	// stamped the file, since the probe.
	var appID, version int
	if err := tx.QueryRowContext(ctx, `SELECT
		(SELECT application_id FROM pragma_application_id),
		(SELECT user_version FROM pragma_user_version)`).Scan(&appID, &version); err != nil {
		return false, err
	}
	if version > known {
		return false, fmt.Errorf("%s has schema version %d, newer than this parley knows (%d): upgrade parley", db.path, version, known)
	}
	if version >= m.version {
		return false, nil
	}
	if version == 0 {
		if appID != 0 && appID != ApplicationID {
			return false, fmt.Errorf("%s is not a Parley database (application_id %#x)", db.path, uint32(appID))
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", ApplicationID)); err != nil {
			return false, err
		}
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", m.version)); err != nil {
		return false, err
	}
	return true, tx.Commit()
}

// mapErr gives a storage error its hub kind, naming the operation. Context errors
// stay visible to errors.Is.
func (db *DB) mapErr(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	var he *hub.Error
	if errors.As(err, &he) {
		if he.Op == "" {
			return &hub.Error{Op: op, Kind: he.Kind, Err: he.Err}
		}
		return err
	}
	if cerr := ctx.Err(); cerr != nil {
		// A cancelled context shows up from the driver as SQLITE_INTERRUPT or
		// as the context's own error; the caller wants the latter.
		return &hub.Error{Op: op, Kind: ctxKind(cerr), Err: cerr}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &hub.Error{Op: op, Kind: ctxKind(err), Err: err}
	}
	if errors.Is(err, sql.ErrNoRows) {
		return &hub.Error{Op: op, Kind: hub.NotFound, Err: err}
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch code := se.Code(); code & 0xff {
		case sqlite3.SQLITE_FULL:
			return hub.Errorf(op, hub.Unavailable, "database or disk is full (%s): %w", db.path, err)
		case sqlite3.SQLITE_IOERR:
			return hub.Errorf(op, hub.Unavailable, "disk I/O error on %s: %w", db.path, err)
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return hub.Errorf(op, hub.Unavailable, "%s is corrupt: %w", db.path, err)
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return hub.Errorf(op, hub.Unavailable, "database %s is locked by another process: %w", db.path, err)
		case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM:
			if err := outOfFiles(); err != nil {
				return hub.Errorf(op, hub.Unavailable, "cannot open %s: %v", db.path, err)
			}
			return hub.Errorf(op, hub.Unavailable, "cannot write %s: %w", db.path, err)
		case sqlite3.SQLITE_CONSTRAINT:
			if code == sqlite3.SQLITE_CONSTRAINT_UNIQUE || code == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY {
				return &hub.Error{Op: op, Kind: hub.Conflict, Err: err}
			}
		}
	}
	if errors.Is(err, sql.ErrConnDone) || errors.Is(err, sql.ErrTxDone) {
		return &hub.Error{Op: op, Kind: hub.Unavailable, Err: err}
	}
	return &hub.Error{Op: op, Kind: hub.Internal, Err: err}
}

func ctxKind(err error) hub.Kind {
	if errors.Is(err, context.DeadlineExceeded) {
		return hub.Timeout
	}
	return hub.Unavailable
}

// markKnown records that ws has a row in the workspaces table; call it only after
// the transaction that inserted the row committed.
func (db *DB) markKnown(ws string) { db.known.Store(ws, struct{}{}) }

func (db *DB) isKnown(ws string) bool {
	_, ok := db.known.Load(ws)
	return ok
}

// rowScanner is what *sql.Row and *sql.Rows have in common.
type rowScanner interface{ Scan(...any) error }
