package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/parley-dev/parley/internal/hub"
)

// Maintenance: pruning (hub.Store.Purge), copies and checks, and the bounded
// check that Open runs on an existing file.

// purgeBatch bounds the messages one purge transaction deletes, so that a
// large purge holds the writer for milliseconds at a time, not seconds.
const purgeBatch = 500

// Purge deletes the messages created before q.Before that all their
// recipients have read (and acknowledged, when asked: hub.PurgeQuery),
// oldest first. Candidates are found on the read pool,
// walking messages in arrival order and stopping at the first one not older
// than cutoff (arrival order follows creation time, so the walk costs what
// is old, not the whole table); each batch is re-checked for unread copies
// inside its write transaction.
func (db *DB) Purge(ctx context.Context, q hub.PurgeQuery) (hub.PurgeResult, error) {
	const op = "purge"
	var res hub.PurgeResult
	cut, givenUp := q.Before.UnixNano(), nanos(q.AckGivenUp)
	keyed := cut
	if !q.KeyedBefore.IsZero() && q.KeyedBefore.Before(q.Before) {
		keyed = q.KeyedBefore.UnixNano()
	}
	after := int64(0)
	for {
		seqs, more, err := db.purgeCandidates(ctx, after, cut)
		if err != nil {
			return res, db.mapErr(ctx, op, err)
		}
		if len(seqs) > 0 {
			after = seqs[len(seqs)-1]
			list, _ := json.Marshal(seqs)
			var m, d int64
			err := db.write(ctx, op, func(ctx context.Context, c *sql.Conn) error {
				m, d = 0, 0
				// Keep only the messages with no unread copy, and none that
				// awaits an ack it asked for (unless its deadline is before
				// givenUp and its sender was told), then delete their
				// deliveries before them (deliveries reference them).
				if _, err := c.ExecContext(ctx, `CREATE TEMP TABLE IF NOT EXISTS purge_seqs (seq INTEGER PRIMARY KEY)`); err != nil {
					return err
				}
				if _, err := c.ExecContext(ctx, `DELETE FROM temp.purge_seqs`); err != nil {
					return err
				}
				if _, err := c.ExecContext(ctx, `INSERT INTO temp.purge_seqs (seq)
					SELECT j.value FROM json_each(?1) j
					WHERE NOT EXISTS (SELECT 1 FROM deliveries u WHERE u.message_seq = j.value AND u.read_at IS NULL)
					AND NOT EXISTS (SELECT 1 FROM messages k WHERE k.seq = j.value AND k.idem_key IS NOT NULL AND k.created_at >= ?3)
					AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.seq = j.value AND m.ack_required
						AND EXISTS (SELECT 1 FROM deliveries u WHERE u.message_seq = m.seq AND u.acked_at = 0)
						AND NOT (m.ack_reported AND m.ack_deadline > 0 AND m.ack_deadline < ?2))`, string(list), givenUp, keyed); err != nil {
					return err
				}
				r, err := c.ExecContext(ctx, `DELETE FROM deliveries WHERE message_seq IN (SELECT seq FROM temp.purge_seqs)`)
				if err != nil {
					return err
				}
				d, _ = r.RowsAffected()
				r, err = c.ExecContext(ctx, `DELETE FROM messages WHERE seq IN (SELECT seq FROM temp.purge_seqs)`)
				if err != nil {
					return err
				}
				m, _ = r.RowsAffected()
				_, err = c.ExecContext(ctx, `DELETE FROM temp.purge_seqs`)
				return err
			})
			if err != nil {
				return res, err
			}
			res.Messages += m
			res.Deliveries += d
		}
		if !more {
			return res, nil
		}
	}
}

// purgeCandidates returns up to purgeBatch message seqs after after, created
// before cut, and whether the walk should go on.
func (db *DB) purgeCandidates(ctx context.Context, after, cut int64) ([]int64, bool, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT seq, created_at FROM messages WHERE seq > ? ORDER BY seq LIMIT ?`, after, purgeBatch)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	var seqs []int64
	n := 0
	for rows.Next() {
		n++
		var seq, created int64
		if err := rows.Scan(&seq, &created); err != nil {
			return nil, false, err
		}
		if created >= cut {
			return seqs, false, rows.Err()
		}
		seqs = append(seqs, seq)
	}
	return seqs, n == purgeBatch, rows.Err()
}

// Backup writes a consistent copy of the database to path (BackupFile).
func (db *DB) Backup(ctx context.Context, path string) error {
	return BackupFile(ctx, db.path, path)
}

// BackupFile writes a consistent copy of the database at src to path with
// VACUUM INTO on a read-only connection of its own: a snapshot as of one read
// transaction, which neither blocks a daemon's writes nor waits for them, so
// it works while the daemon runs. The copy is made under a temporary name
// beside path and linked into place, so path never holds half a copy and an
// existing file is never replaced.
func BackupFile(ctx context.Context, src, path string) error {
	const op = "backup"
	if !filepath.IsAbs(path) {
		return hub.Errorf(op, hub.Invalid, "backup path %q is not absolute", path)
	}
	if _, err := os.Lstat(path); err == nil {
		return hub.Errorf(op, hub.Conflict, "%s exists: choose a new file name", path)
	}
	if err := Verify(ctx, src, false); err != nil {
		return hub.Errorf(op, hub.Invalid, "%w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return hub.Errorf(op, hub.Invalid, "%w", err)
	}
	tmp := f.Name()
	f.Close()
	defer os.Remove(tmp)
	ro, err := sql.Open("sqlite", dsn(src, "mode=ro", "_pragma=busy_timeout("+fmt.Sprint(busyTimeoutMS)+")"))
	if err != nil {
		return hub.Errorf(op, hub.Internal, "%w", err)
	}
	defer ro.Close()
	// VACUUM INTO accepts an empty file: the one made exclusively above.
	if _, err := ro.ExecContext(ctx, `VACUUM INTO ?`, tmp); err != nil {
		return hub.Errorf(op, hub.Internal, "copy %s to %s: %w", src, path, err)
	}
	if err := syncFile(tmp); err != nil {
		return hub.Errorf(op, hub.Internal, "sync %s: %w", tmp, err)
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return hub.Errorf(op, hub.Conflict, "%s exists: choose a new file name", path)
		}
		return hub.Errorf(op, hub.Internal, "%w", err)
	}
	return nil
}

// Verify checks that the file at path is a Parley database that this version
// can open: SQLite, Parley's application id, a schema version no newer than
// this Parley's. With full it also runs PRAGMA quick_check over every page.
// It never writes to path (a read-only connection).
func Verify(ctx context.Context, path string, full bool) error {
	migs, err := loadMigrations()
	if err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	var hdr [len(sqliteMagic)]byte
	_, err = io.ReadFull(f, hdr[:])
	f.Close()
	if err != nil || string(hdr[:]) != sqliteMagic {
		return fmt.Errorf("%s is not a Parley database: it is not an SQLite file", path)
	}
	_, werr := os.Stat(path + "-wal")
	if err := probe(ctx, path, len(migs), werr != nil); err != nil {
		return err
	}
	p, err := sql.Open("sqlite", dsn(path, "mode=ro", "_pragma=busy_timeout("+fmt.Sprint(busyTimeoutMS)+")"))
	if err != nil {
		return err
	}
	defer p.Close()
	var appID int
	if err := p.QueryRowContext(ctx, `SELECT application_id FROM pragma_application_id`).Scan(&appID); err != nil {
		return probeErr(path, err)
	}
	if appID != ApplicationID {
		return fmt.Errorf("%s is not a Parley database: an empty SQLite file", path)
	}
	if !full {
		return nil
	}
	problems, err := quickCheck(ctx, p)
	if err != nil {
		return probeErr(path, err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s is corrupt (%s)", path, strings.Join(problems[:min(3, len(problems))], "; "))
	}
	return nil
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}

// Check runs PRAGMA quick_check over the whole file, on the read pool. It
// reads every page: for doctor, not for start-up (see boundedCheck).
func (db *DB) Check(ctx context.Context) ([]string, error) {
	problems, err := quickCheck(ctx, db.r)
	return problems, db.mapErr(ctx, "check", err)
}

func quickCheck(ctx context.Context, p *sql.DB) ([]string, error) {
	rows, err := p.QueryContext(ctx, `PRAGMA quick_check`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		if s != "ok" {
			problems = append(problems, s)
		}
	}
	return problems, rows.Err()
}

// boundedCheck is the start-up check of an existing database: its cost does
// not grow with the file. PRAGMA quick_check read all of a 406 MB database
// and made a restart take 5 s. This reads the header, the schema, and the
// first and last pages of every table instead, which catches a truncated
// copy, a damaged schema and a damaged root page, the damage a crash or a bad
// copy leaves. The full check is `parley doctor` (Check).
func boundedCheck(ctx context.Context, p *sql.DB, path string) error {
	if err := checkHeader(path); err != nil {
		return err
	}
	rows, err := p.QueryContext(ctx, `SELECT name, coalesce(sql, '') FROM sqlite_schema WHERE type = 'table'`)
	if err != nil {
		return probeErr(path, err)
	}
	type table struct{ name, sql string }
	var tables []table
	for rows.Next() {
		var t table
		if err := rows.Scan(&t.name, &t.sql); err != nil {
			rows.Close()
			return probeErr(path, err)
		}
		tables = append(tables, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return probeErr(path, err)
	}
	for _, t := range tables {
		upper := strings.ToUpper(t.sql)
		if strings.HasPrefix(upper, "CREATE VIRTUAL") {
			continue // its shadow tables are checked as tables
		}
		q := `SELECT count(*) FROM (SELECT 1 FROM "` + strings.ReplaceAll(t.name, `"`, `""`) + `" LIMIT 1)`
		var n int
		if err := p.QueryRowContext(ctx, q).Scan(&n); err != nil {
			return probeErr(path, err)
		}
		if !strings.Contains(upper, "WITHOUT ROWID") {
			q := `SELECT count(*) FROM (SELECT 1 FROM "` + strings.ReplaceAll(t.name, `"`, `""`) + `" ORDER BY rowid DESC LIMIT 1)`
			if err := p.QueryRowContext(ctx, q).Scan(&n); err != nil {
				return probeErr(path, err)
			}
		}
	}
	return nil
}

// checkHeader compares the database size the header records with the file's:
// a file shorter than its header says was cut off (an interrupted copy).
// Beside a write-ahead log with frames in it, the file alone is not the
// database: a checkpoint writes page 1 first, so a daemon killed during one
// leaves a header ahead of the file, and SQLite recovers from the log. The
// probes that follow catch real damage there.
func checkHeader(path string) error {
	if st, err := os.Stat(path + "-wal"); err == nil && st.Size() > 0 {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var h [100]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return fmt.Errorf("%s is corrupt (the header is cut short); it was left untouched: restore it from a backup or move it aside", path)
	}
	pageSize := int64(binary.BigEndian.Uint16(h[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	pages := int64(binary.BigEndian.Uint32(h[28:32]))
	// The in-header size is valid only when written by a SQLite that keeps
	// it (version-valid-for equals the change counter).
	if binary.BigEndian.Uint32(h[92:96]) != binary.BigEndian.Uint32(h[24:28]) || pages == 0 {
		return nil
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if want := pages * pageSize; st.Size() < want {
		return fmt.Errorf("%s is corrupt (%d bytes, but its header records %d pages of %d bytes: the file was cut short); it was left untouched: restore it from a backup or move it aside", path, st.Size(), pages, pageSize)
	}
	return nil
}

// outOfFiles tells whether the process has run out of file descriptors, the
// usual cause of SQLITE_CANTOPEN in a daemon that serves many clients, by
// trying to open one more file. It returns the explanation, or nil.
func outOfFiles() error {
	f, err := os.Open(os.DevNull)
	if err == nil {
		f.Close()
		return nil
	}
	if !errors.Is(err, syscall.EMFILE) && !errors.Is(err, syscall.ENFILE) {
		return nil
	}
	return fmt.Errorf("the daemon has run out of file descriptors (too many open files%s): close idle clients, or raise the limit (ulimit -n) and restart the daemon", fileLimit())
}
