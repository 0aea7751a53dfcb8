// Package e2e drives the real parley binary: a real daemon in a temporary
// PARLEY_HOME, real MCP clients (go-sdk, and the TypeScript SDK from npm) through
// `parley mcp serve`, the real CLI.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/proc"
	"github.com/parley-dev/parley/internal/store/postgres/pgtest"
	"github.com/parley-dev/parley/internal/testenv"
	"github.com/parley-dev/parley/internal/testenv/standin"
)

var bin string // the parley binary under test

func TestMain(m *testing.M) {
	var err error
	if bin, err = testenv.Binary(testenv.Parley); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(pgtest.Main(m)) // stops the PostgreSQL cluster, if a test started one
}

// env is one Parley installation: a state directory and its daemon.
type env struct {
	*testenv.Env
	t     testing.TB
	home  string
	extra []string // more environment for every command
}

// newEnv makes an installation (testenv.New) whose commands run with extra
// in their environment, and with what tests add to e.extra later.
func newEnv(t testing.TB, extra ...string) *env {
	t.Helper()
	e := &env{t: t, extra: extra}
	e.Env = testenv.New(t, bin, &testenv.Options{Prefix: "pe"})
	e.home, e.Env.Environ = e.Env.Home, e.environ
	return e
}

// envAt is the installation at home, left to the caller to clean up.
func envAt(t testing.TB, home string, extra ...string) *env {
	e := &env{t: t, home: home, extra: extra}
	e.Env = &testenv.Env{T: t, Bin: bin, Home: home, Environ: e.environ}
	return e
}

func (e *env) environ() []string {
	env := []string{"PARLEY_HOME=" + e.home, "PATH=" + os.Getenv("PATH"), "HOME=" + e.home, testenv.GoRace()}
	if w := os.Getenv("PARLEY_SDK_WORKAROUNDS"); w != "" {
		// PARLEY_SDK_WORKAROUNDS=-typed runs every daemon without it.
		env = append(env, "PARLEY_SDK_WORKAROUNDS="+w)
	}
	return append(env, e.extra...)
}

// withCodex puts the pinned Codex CLI first on the PATH of e's commands,
// with CODEX_HOME in e's state directory, and returns that home. With
// codex on PATH, init has Codex trust the hooks it adds: an untrusted hook
// stops a session at Codex's "Hooks need review".
func (e *env) withCodex(tb testing.TB) string {
	home := filepath.Join(e.home, "codex")
	e.extra = append(e.extra, "CODEX_HOME="+home, "PATH="+filepath.Dir(standin.CLI(tb, "codex"))+string(os.PathListSeparator)+os.Getenv("PATH"))
	return home
}

// httpClient talks HTTP over the daemon's socket.
func (e *env) httpClient() *http.Client {
	sock := filepath.Join(e.home, "parley.sock")
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
}

// daemonPID returns the pid in the lock file.
func (e *env) daemonPID() int {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.home, "parley.pid"))
	if err != nil {
		e.t.Fatalf("read pid file: %v", err)
	}
	var li struct{ PID int }
	if err := json.Unmarshal(b, &li); err != nil {
		e.t.Fatalf("parse pid file: %v", err)
	}
	return li.PID
}

// kill9 kills the daemon without a chance to clean up, and waits for it to die.
func (e *env) kill9() {
	e.t.Helper()
	pid := e.daemonPID()
	if err := proc.Kill(pid); err != nil {
		e.t.Fatalf("kill -9 %d: %v", pid, err)
	}
	for i := 0; i < 500; i++ {
		if !proc.Alive(pid) {
			return
		}
		// Reap it if it is our child (it is not: it was started detached).
		time.Sleep(10 * time.Millisecond)
	}
	e.t.Fatalf("daemon %d survived kill -9", pid)
}

// call calls a tool and decodes its structured result into out; it fails the
// test on a protocol error and returns the result.
func call(t testing.TB, s *mcp.ClientSession, name string, args map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	if out != nil && !res.IsError {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("decode %s result %s: %v", name, b, err)
		}
	}
	return res
}

// mustCall is call that fails the test on a tool error too.
func mustCall(t testing.TB, s *mcp.ClientSession, name string, args map[string]any, out any) {
	t.Helper()
	if res := call(t, s, name, args, out); res.IsError {
		t.Fatalf("call %s(%v): tool error: %s", name, args, text(res))
	}
}

// text joins the text contents of a result.
func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// syncBuffer is a bytes.Buffer safe for a writer goroutine and a reader.
type syncBuffer = testenv.SyncBuffer

// waitUntil polls cond, which depends on other processes, for up to 20 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitFor(t, 20*time.Second, what, func() (bool, string) { return cond(), "" })
}

// waitFor polls cond, which depends on other processes, for up to within.
// When it gives up, the failure names what it waited for and what cond last
// saw (its counts, say).
func waitFor(t *testing.T, within time.Duration, what string, cond func() (ok bool, saw string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, saw := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			if saw != "" {
				saw = ": " + saw
			}
			t.Fatalf("gave up after %s waiting for %s%s", within, what, saw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
