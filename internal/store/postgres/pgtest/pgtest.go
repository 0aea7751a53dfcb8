// Package pgtest gives tests a real PostgreSQL: a private cluster started from
// the installed server binaries in a temporary directory, once per test binary,
// or the server named by PARLEY_TEST_POSTGRES. Each test gets its own schema or
// database on it, so tests run in parallel without seeing each other.
//
// Tests that use it call Main from their TestMain, which stops the cluster when
// the binary ends; the postmaster is also told to quit if the test binary dies
// first. Only tests, and the benchmark command (bench/cmd/parley-bench), import this package.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvDSN names an existing server to test against instead of a private cluster.
// Its user must be allowed to create schemas and databases.
const EnvDSN = "PARLEY_TEST_POSTGRES"

// Cluster is a private PostgreSQL server: its data directory, its Unix socket
// directory and its postmaster. It listens on the socket only, so clusters of
// parallel test binaries never fight over a port.
type Cluster struct {
	Dir  string // holds data/ and the socket; removed by Close
	bin  string
	port int
	uid  runAs // run as this user (when started as root)

	mu     sync.Mutex
	cmd    *exec.Cmd
	log    *os.File
	exited chan error // the postmaster's exit, once
}

// BinDir returns the directory of the newest installed PostgreSQL server
// binaries, or an error saying that none is installed.
func BinDir() (string, error) {
	if p, err := exec.LookPath("pg_config"); err == nil {
		if out, err := exec.Command(p, "--bindir").Output(); err == nil {
			dir := string(trimSpace(out))
			if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
				return dir, nil
			}
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("PostgreSQL is not installed (no initdb in /usr/lib/postgresql/*/bin or from pg_config): install Debian's postgresql (scripts/test-deps) or set " + EnvDSN)
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

// Private starts a cluster of the test's own, which it may stop and start,
// and closes it when the test ends; it skips the test when PostgreSQL is not
// installed.
func Private(t testing.TB) *Cluster {
	t.Helper()
	if _, err := BinDir(); err != nil {
		t.Skipf("PostgreSQL tests skipped: %v", err)
	}
	c, err := NewCluster()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// NewCluster initialises a cluster in a new temporary directory and starts it.
// As root, the server runs as the "postgres" user, which PostgreSQL requires.
func NewCluster() (*Cluster, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "parley-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, bin: bin, port: 5432}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("PostgreSQL refuses to run as root and there is no postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.uid = asUser(uid, gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", c.dataDir(), "-A", "trust", "-U", "postgres",
		"--no-sync", "-E", "UTF8", "--locale=C")
	initdb.SysProcAttr = c.uid.attr()
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	if err := c.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return c, nil
}

func (c *Cluster) dataDir() string { return filepath.Join(c.Dir, "data") }

// Start starts the postmaster and returns once it accepts connections.
func (c *Cluster) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd != nil {
		return errors.New("cluster is running")
	}
	log, err := os.OpenFile(filepath.Join(c.Dir, "postgres.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(c.bin, "postgres"), "-D", c.dataDir(),
		"-p", strconv.Itoa(c.port),
		"-c", "listen_addresses=",
		"-c", "unix_socket_directories="+c.Dir,
		"-c", "max_connections=400",
		"-c", "shared_buffers=32MB",
	)
	cmd.Stdout, cmd.Stderr = log, log
	// On Linux, if the test binary dies (kill -9, a panic in another
	// goroutine), the postmaster gets SIGQUIT, its immediate shutdown.
	cmd.SysProcAttr = c.uid.postmasterAttr()
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start postgres: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, c.DSN("postgres"))
		if err == nil {
			conn.Close(ctx)
			break
		}
		select {
		case werr := <-exited:
			log.Close()
			b, _ := os.ReadFile(filepath.Join(c.Dir, "postgres.log"))
			return fmt.Errorf("postgres exited at start (%v):\n%s", werr, b)
		case <-ctx.Done():
			cmd.Process.Kill()
			<-exited
			log.Close()
			return fmt.Errorf("postgres did not accept connections within 30s: %w", err)
		case <-time.After(10 * time.Millisecond): // polling for readiness
		}
	}
	c.cmd, c.log, c.exited = cmd, log, exited
	return nil
}

// Stop shuts the server down the way an administrator's restart does (fast
// shutdown: sessions are ended, the data is checkpointed) and waits for it.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil {
		return nil
	}
	c.cmd.Process.Signal(os.Interrupt)
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		c.cmd.Process.Kill()
		<-c.exited
	}
	c.log.Close()
	c.cmd, c.log = nil, nil
	return nil
}

// Close stops the server and removes its directory.
func (c *Cluster) Close() error {
	c.Stop()
	return os.RemoveAll(c.Dir)
}

// DSN is a connection URL for database db as the superuser, over the socket.
func (c *Cluster) DSN(db string) string {
	q := url.Values{"host": {c.Dir}, "port": {strconv.Itoa(c.port)}, "user": {"postgres"}, "sslmode": {"disable"}}
	return "postgres:///" + url.PathEscape(db) + "?" + q.Encode()
}

var shared struct {
	once    sync.Once
	cluster *Cluster // nil when EnvDSN names the server
	dsn     string   // the server's admin DSN
	err     error
}

// Server returns the admin DSN of the shared test server: PARLEY_TEST_POSTGRES if
// set, else a private cluster started on first use. It skips the test, with the
// reason, when PostgreSQL is not installed.
func Server(t testing.TB) string {
	t.Helper()
	shared.once.Do(func() {
		if dsn := os.Getenv(EnvDSN); dsn != "" {
			shared.dsn = dsn
			return
		}
		shared.cluster, shared.err = NewCluster()
		if shared.err == nil {
			shared.dsn = shared.cluster.DSN("postgres")
		}
	})
	if shared.err != nil {
		if _, err := BinDir(); err != nil {
			t.Skipf("PostgreSQL tests skipped: %v", err)
		}
		t.Fatalf("start test PostgreSQL: %v", shared.err)
	}
	return shared.dsn
}

// Main runs the tests and then stops the shared cluster, if one was started.
// Call it from TestMain: os.Exit(pgtest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if shared.cluster != nil {
		shared.cluster.Close()
	}
	return code
}

func randomName(prefix string) string {
	b := make([]byte, 6)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// Schema creates an empty schema on the shared server and returns a DSN whose
// connections use it; it is dropped when the test ends. Cheap enough for one
// per subtest.
func Schema(t testing.TB) string {
	t.Helper()
	dsn := Server(t)
	name := randomName("t_")
	admin(t, dsn, "CREATE SCHEMA "+name)
	t.Cleanup(func() { adminCleanup(t, dsn, "DROP SCHEMA "+name+" CASCADE") })
	return withParam(t, dsn, "search_path", name)
}

// Database creates an empty database on the shared server and returns its DSN;
// it is dropped when the test ends. Use it where LISTEN/NOTIFY must not reach
// other tests, or where several daemons share one database.
func Database(t testing.TB) string {
	t.Helper()
	dsn := Server(t)
	name := randomName("parley_")
	admin(t, dsn, "CREATE DATABASE "+name)
	t.Cleanup(func() { adminCleanup(t, dsn, "DROP DATABASE "+name+" WITH (FORCE)") })
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("parse %s: %v", EnvDSN, err)
	}
	u.Path = "/" + name
	return u.String()
}

func withParam(t testing.TB, dsn, k, v string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("parse %s: %v", EnvDSN, err)
	}
	q := u.Query()
	q.Set(k, v)
	u.RawQuery = q.Encode()
	return u.String()
}

func admin(t testing.TB, dsn, sql string) {
	t.Helper()
	if err := exec1(dsn, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func adminCleanup(t testing.TB, dsn, sql string) {
	if err := exec1(dsn, sql); err != nil {
		t.Errorf("%s: %v", sql, err)
	}
}

func exec1(dsn, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}
