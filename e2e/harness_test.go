// Package e2e drives the real parley binary: a real daemon in a temporary
// PARLEY_HOME, real MCP clients (go-sdk, and the TypeScript SDK from npm) through
// `parley mcp serve`, the real CLI.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var bin string // the parley binary under test

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "parley-e2e-bin")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "parley")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/parley").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build parley: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// env is one Parley installation: a state directory and its daemon.
type env struct {
	t     testing.TB
	home  string
	extra []string // more environment for every command
}

// newEnv makes a state directory at a short path (socket paths are bounded)
// and stops its daemon when the test ends.
func newEnv(t testing.TB, extra ...string) *env {
	t.Helper()
	home, err := os.MkdirTemp("/tmp", "pe")
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, home: home, extra: extra}
	t.Cleanup(func() {
		e.run("daemon", "stop", "--timeout", "5s")
		os.RemoveAll(home)
	})
	return e
}

func (e *env) environ() []string {
	env := []string{"PARLEY_HOME=" + e.home, "PATH=" + os.Getenv("PATH"), "HOME=" + e.home}
	return append(env, e.extra...)
}

func (e *env) cmd(args ...string) *exec.Cmd {
	c := exec.Command(bin, args...)
	c.Env = e.environ()
	c.Dir = e.home
	return c
}

// run runs the CLI and returns its stdout, stderr and exit code.
func (e *env) run(args ...string) (string, string, int) {
	c := e.cmd(args...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("run parley %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// must runs the CLI and fails the test unless it exits 0.
func (e *env) must(args ...string) string {
	e.t.Helper()
	out, errs, code := e.run(args...)
	if code != 0 {
		e.t.Fatalf("parley %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// mustJSON runs a CLI read command with --json and decodes its output.
func (e *env) mustJSON(v any, args ...string) {
	e.t.Helper()
	out := e.must(append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		e.t.Fatalf("parley %v --json: %v\n%s", args, err, out)
	}
}

// session connects a go-sdk client through `parley mcp serve args...`.
func (e *env) session(opts *mcp.ClientOptions, args ...string) *mcp.ClientSession {
	e.t.Helper()
	c := e.cmd(append([]string{"mcp", "serve"}, args...)...)
	stderr := &syncBuffer{}
	c.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, &mcp.CommandTransport{Command: c}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		e.t.Fatalf("connect mcp serve %v: %v", args, err)
	}
	e.t.Cleanup(func() {
		s.Close()
		if e.t.Failed() {
			e.t.Logf("mcp serve %v stderr:\n%s", args, stderr.String())
		}
	})
	return s
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
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		e.t.Fatalf("kill -9 %d: %v", pid, err)
	}
	for i := 0; i < 500; i++ {
		if syscall.Kill(pid, 0) != nil {
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
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
