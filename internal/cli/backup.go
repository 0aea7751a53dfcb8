package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/internal/config"
	"github.com/parley-dev/parley/internal/daemon"
	"github.com/parley-dev/parley/internal/home"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/store/sqlite"
)

// Backup and restore work on the SQLite file itself, not through the daemon:
// a backup is one read transaction beside the daemon's (WAL lets it run
// while the daemon writes), and a restore must not run beside a daemon at
// all, so it holds the daemon's PID lock while it swaps the file.

// sqliteHome returns the state directory's paths, refusing a PostgreSQL
// store, whose copies are pg_dump's business.
func sqliteHome(op string) (home.Paths, error) {
	paths, err := home.Resolve("")
	if err != nil {
		return paths, err
	}
	conf, err := config.Load(paths.Config)
	if err != nil {
		return paths, err
	}
	sel := conf.Store
	if v := os.Getenv(daemon.EnvStore); v != "" {
		sel = v
	}
	if sel != "" && sel != "sqlite" {
		return paths, hub.Errorf(op, hub.Invalid, "the store is PostgreSQL, which is shared by every daemon that uses it and has its own tools: %s copies the SQLite file only; use pg_dump (an online, consistent copy) and pg_restore", "parley "+op)
	}
	return paths, nil
}

type backupResult struct {
	File     string `json:"file"`
	Bytes    int64  `json:"bytes"`
	Previous string `json:"previous,omitempty"` // restore: where the replaced database went
}

func backupCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "backup FILE",
		Short: "Write a consistent copy of the database to FILE, while the daemon runs",
		Long: `Write a consistent copy of $PARLEY_HOME/parley.db to FILE, a new file: a
snapshot as of one moment, taken beside a running daemon without stopping it
(SQLite's VACUUM INTO on a read-only connection). ` + "`parley restore FILE`" + ` puts it back.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, err := sqliteHome("backup")
			if err != nil {
				return err
			}
			out, err := filepath.Abs(args[0])
			if err != nil {
				return err
			}
			if err := sqlite.BackupFile(cmd.Context(), paths.DB, out); err != nil {
				return err
			}
			st, err := os.Stat(out)
			if err != nil {
				return err
			}
			res := backupResult{File: out, Bytes: st.Size()}
			return g.out(res, func(w io.Writer) {
				fmt.Fprintf(w, "backed up %s to %s (%d bytes)\n", paths.DB, out, res.Bytes)
			})
		},
	}
	addJSON(cmd, g)
	return cmd
}

func restoreCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "restore FILE",
		Short: "Replace the database with a backup (the daemon must be stopped)",
		Long: `Replace $PARLEY_HOME/parley.db with the backup FILE. FILE must be a whole Parley
database no newer than this parley (it is checked page by page first); the
daemon must be stopped (` + "`parley daemon stop`" + `). The database it replaces is
kept beside it as parley.db.before-restore-TIME.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, err := sqliteHome("restore")
			if err != nil {
				return err
			}
			src, err := filepath.Abs(args[0])
			if err != nil {
				return err
			}
			if err := sqlite.Verify(cmd.Context(), src, true); err != nil {
				return hub.Errorf("restore", hub.Invalid, "refusing %s: %w", src, err)
			}
			unlock, err := daemon.LockHome(paths)
			if ar := (*daemon.AlreadyRunningError)(nil); errors.As(err, &ar) {
				return hub.Errorf("restore", hub.Conflict, "the daemon is running (pid %d): stop it with `parley daemon stop`, then restore", ar.Info.PID)
			}
			if err != nil {
				return err
			}
			defer unlock()
			// The database and its WAL go aside together: the WAL belongs
			// to that file and would be replayed into the restored one.
			prev := ""
			if _, err := os.Lstat(paths.DB); err == nil {
				prev = paths.DB + ".before-restore-" + time.Now().UTC().Format("20060102T150405Z")
				for _, suffix := range []string{"", "-wal", "-shm"} {
					if err := os.Rename(paths.DB+suffix, prev+suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
						return fmt.Errorf("restore: move the current database aside: %w", err)
					}
				}
			}
			// A copy through SQLite, not of bytes: it reads the backup through
			// any WAL beside it, and writes a whole new file, linked into place.
			if err := sqlite.BackupFile(cmd.Context(), src, paths.DB); err != nil {
				return err
			}
			st, _ := os.Stat(paths.DB)
			res := backupResult{File: src, Bytes: st.Size(), Previous: prev}
			return g.out(res, func(w io.Writer) {
				fmt.Fprintf(w, "restored %s into %s\n", src, paths.DB)
				if prev != "" {
					fmt.Fprintf(w, "the database it replaced is at %s\n", prev)
				}
			})
		},
	}
	addJSON(cmd, g)
	return cmd
}
