// Package postgres keeps the hub's state, and the runner's, in a PostgreSQL
// database that several daemons (one per machine) share. It implements hub.Store
// and runner.Store on pgx, and hub.Notifier with LISTEN/NOTIFY, so that a send on
// one daemon wakes the waiters of another.
//
// It owns the schema and its embedded migrations. The daemon imports it when
// config.toml or PARLEY_STORE names a postgres:// URL; nothing else of Parley's
// should.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/parley-dev/parley/internal/hub"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Options configures Open. A nil *Options means the defaults.
type Options struct {
	// Logger receives the store's few log lines (migrations, reconnects);
	// nil discards them.
	Logger *slog.Logger
	// MaxConns bounds the connection pool; 0 means 16. Sends take one
	// connection for all of them (sendbatch.go); reads and waits the rest.
	MaxConns int32
	// Node names this daemon among those that share the database (host and
	// state directory). The runner's methods see only this node's managed
	// agents: a managed agent runs on the daemon that launched it.
	Node string
	// Host is this daemon's machine, recorded on the agents it sees.
	Host string
}

// DB is a hub.Store and runner.Store on PostgreSQL. Its methods are safe for
// concurrent use.
type DB struct {
	pool *pgxpool.Pool
	// lazy commits without waiting for the WAL to reach disk
	// (synchronous_commit off), for state whose loss in a power cut (not a
	// crash of PostgreSQL or of a daemon: those lose nothing) is harmless:
	// leases, read marks, last-seen times. It takes the flush off every
	// wake-up: a send is durable, the take that reads it need not be. At
	// worst a power cut hands a read message out again, never loses one.
	lazy *pgxpool.Pool
	log  *slog.Logger
	dsn  string // as given: the listener opens its own connection with it
	node string
	host string
	// origin names this DB in the notifications it sends (notify.go), so
	// that its own notifier skips them.
	origin string

	closeOnce sync.Once

	// sends commits concurrent sends together (sendbatch.go).
	sends batcher[pendingSend]

	// beaten: this daemon has beaten once (liveness.go).
	beaten atomic.Bool

	// known holds workspaces already recorded in the workspaces table, so the hot
	// write paths skip that insert once a workspace has been seen.
	known sync.Map // string -> struct{}
}

var _ hub.Store = (*DB)(nil)

// IsURL reports whether s names a PostgreSQL database (postgres:// or
// postgresql://) rather than a SQLite file.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Redact returns the URL with its password replaced, for logs and status output.
func Redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "postgres://(unparseable URL)"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// Open connects to the database at dsn (a postgres:// URL) and brings its schema
// up to date. Several daemons may open the same database at once: migrations
// take an advisory lock.
func Open(ctx context.Context, dsn string, opts *Options) (*DB, error) {
	if opts == nil {
		opts = &Options{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's message may quote the URL, password included.
		return nil, fmt.Errorf("open store %s: invalid PostgreSQL URL", Redact(dsn))
	}
	cfg.MaxConns = opts.MaxConns
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 16
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", Redact(dsn), err)
	}
	lcfg := cfg.Copy()
	lcfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	lazy, err := pgxpool.NewWithConfig(ctx, lcfg)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("open store %s: %w", Redact(dsn), err)
	}
	db := &DB{pool: pool, lazy: lazy, log: log, dsn: dsn, node: opts.Node, host: opts.Host, origin: newOrigin()}
	if err := db.migrate(ctx); err != nil {
		pool.Close()
		lazy.Close()
		return nil, fmt.Errorf("open store %s: %w", Redact(dsn), err)
	}
	db.sends.start(committers, db.commitSends)
	return db, nil
}

// Close closes every connection. Closing twice is harmless.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		db.sends.stop()
		db.pool.Close()
		db.lazy.Close()
	})
	return nil
}

// Describe names the database for status output, without the password.
func (db *DB) Describe() string { return Redact(db.dsn) }

type migration struct {
	version int
	name    string
	sql     string
}

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

// migrateLock keys the advisory lock that serialises migrations of daemons
// starting at once against one database.
const migrateLock = 0x50524C59 // "PRLY"

// migrate applies the migrations the database lacks, all in one transaction
// with the version that records them, under an advisory lock.
func (db *DB) migrate(ctx context.Context) error {
	migs, err := loadMigrations()
	if err != nil {
		return err
	}
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return db.mapErr(ctx, "migrate", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLock); err != nil {
		return db.mapErr(ctx, "migrate", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS parley_schema (version int NOT NULL)`); err != nil {
		return db.mapErr(ctx, "migrate", err)
	}
	var version int
	err = tx.QueryRow(ctx, `SELECT version FROM parley_schema`).Scan(&version)
	if errors.Is(err, pgx.ErrNoRows) {
		_, err = tx.Exec(ctx, `INSERT INTO parley_schema (version) VALUES (0)`)
	}
	if err != nil {
		return db.mapErr(ctx, "migrate", err)
	}
	if version > len(migs) {
		return fmt.Errorf("the database has schema version %d, newer than this parley knows (%d): upgrade parley; the database was left untouched", version, len(migs))
	}
	for _, m := range migs[version:] {
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return fmt.Errorf("migrate to schema version %d (%s): %w", m.version, m.name, db.mapErr(ctx, "migrate", err))
		}
		db.log.Info("migrated database", "version", m.version)
	}
	if version == len(migs) {
		return nil
	}
	if _, err := tx.Exec(ctx, `UPDATE parley_schema SET version = $1`, len(migs)); err != nil {
		return db.mapErr(ctx, "migrate", err)
	}
	return db.mapErr(ctx, "migrate", tx.Commit(ctx))
}

// mapErr gives a PostgreSQL error its hub kind, naming the operation. A server
// that cannot be reached, or is shutting down, is Unavailable: the daemon answers
// 503 until it is back. Context errors stay visible to errors.Is.
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
		return &hub.Error{Op: op, Kind: ctxKind(cerr), Err: cerr}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &hub.Error{Op: op, Kind: ctxKind(err), Err: err}
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return &hub.Error{Op: op, Kind: hub.NotFound, Err: err}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "23505": // unique_violation
			return &hub.Error{Op: op, Kind: hub.Conflict, Err: err}
		case strings.HasPrefix(pe.Code, "08"), // connection exception
			strings.HasPrefix(pe.Code, "53"),                           // insufficient resources (disk full, too many connections)
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", // shutting down, starting up
			pe.Code == "40001", pe.Code == "40P01": // serialization failure, deadlock: try again
			return hub.Errorf(op, hub.Unavailable, "PostgreSQL cannot serve now: %w", err)
		}
		return &hub.Error{Op: op, Kind: hub.Internal, Err: err}
	}
	if isConnErr(err) {
		return hub.Errorf(op, hub.Unavailable, "PostgreSQL is unreachable: %w", err)
	}
	return &hub.Error{Op: op, Kind: hub.Internal, Err: err}
}

// isConnErr reports whether err is a failure to reach or keep talking to the
// server rather than an error the server reported.
func isConnErr(err error) bool {
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || pgconn.SafeToRetry(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, pgx.ErrTxClosed)
}

func ctxKind(err error) hub.Kind {
	if errors.Is(err, context.DeadlineExceeded) {
		return hub.Timeout
	}
	return hub.Unavailable
}

// ensureWorkspace records ws in the workspaces table once per process.
func (db *DB) ensureWorkspace(ctx context.Context, q querier, ws string) error {
	if _, ok := db.known.Load(ws); ok {
		return nil
	}
	_, err := q.Exec(ctx, `INSERT INTO workspaces (name) VALUES ($1) ON CONFLICT DO NOTHING`, ws)
	return err
}

// markKnown records that ws has a row; call it only after the insert committed.
func (db *DB) markKnown(ws string) { db.known.Store(ws, struct{}{}) }

// querier is what a pool, a connection and a transaction share.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// inTx runs fn in a transaction and commits it.
func (db *DB) inTx(ctx context.Context, op string, fn func(tx pgx.Tx) error) error {
	err := pgx.BeginFunc(ctx, db.pool, fn)
	return db.mapErr(ctx, op, err)
}
