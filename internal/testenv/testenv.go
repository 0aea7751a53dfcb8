// Package testenv is the one harness of the tests that run real binaries:
// it builds them once for every suite (Binary), makes a Parley installation
// with its daemon (New), and drives its CLI and MCP sessions through `parley
// mcp serve` with a go-sdk client. Only tests import it (e2e, internal/runner,
// internal/web, internal/gateway); it imports no Parley package.
package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Env is one Parley installation seen from outside: a binary, a state
// directory and the environment every command runs with.
type Env struct {
	T       testing.TB
	Bin     string          // the parley binary
	Home    string          // PARLEY_HOME, also the commands' working directory
	Environ func() []string // the environment of every command
}

// Options of New; zero values mean defaults.
type Options struct {
	Prefix string   // of the state directory's name under /tmp (default "pt")
	Config string   // config.toml's text, written first when not empty
	Env    []string // more environment for every command
	Start  bool     // start the daemon before returning
}

// New makes a Parley installation of the binary bin for t: a state
// directory at a short path under /tmp (Unix socket paths are bounded) and
// the environment of its commands. When the test ends the daemon is stopped,
// a data race it reported fails the test, its log is shown if the test
// failed, and the directory goes.
func New(t testing.TB, bin string, o *Options) *Env {
	t.Helper()
	if o == nil {
		o = &Options{}
	}
	prefix := o.Prefix
	if prefix == "" {
		prefix = "pt"
	}
	home, err := os.MkdirTemp("/tmp", prefix)
	if err != nil {
		t.Fatal(err)
	}
	extra := o.Env
	e := &Env{T: t, Bin: bin, Home: home, Environ: func() []string {
		return append([]string{"PARLEY_HOME=" + home, "PATH=" + os.Getenv("PATH"), "HOME=" + home, GoRace()}, extra...)
	}}
	t.Cleanup(func() {
		e.Run("daemon", "stop", "--timeout", "10s")
		b, _ := os.ReadFile(filepath.Join(home, "daemon.log"))
		if bytes.Contains(b, []byte("DATA RACE")) {
			t.Errorf("the daemon reported a data race")
		}
		if t.Failed() && len(b) > 0 {
			t.Logf("daemon.log:\n%s", b)
		}
		os.RemoveAll(home)
	})
	if o.Config != "" {
		if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(o.Config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if o.Start {
		e.Must("daemon", "start")
	}
	return e
}

// Cmd returns the command `parley args...` in the environment.
func (e *Env) Cmd(args ...string) *exec.Cmd {
	c := exec.Command(e.Bin, args...)
	c.Env, c.Dir = e.Environ(), e.Home
	return c
}

// Run runs the CLI and returns its stdout, stderr and exit code.
func (e *Env) Run(args ...string) (string, string, int) {
	c := e.Cmd(args...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.T.Fatalf("run parley %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// Must runs the CLI and fails the test unless it exits 0.
func (e *Env) Must(args ...string) string {
	e.T.Helper()
	out, errs, code := e.Run(args...)
	if code != 0 {
		e.T.Fatalf("parley %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// MustJSON runs a CLI read command with --json and decodes its output.
func (e *Env) MustJSON(v any, args ...string) {
	e.T.Helper()
	out := e.Must(append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		e.T.Fatalf("parley %v --json: %v\n%s", args, err, out)
	}
}

// Session connects a go-sdk client (protocol 2025-11-25) through
// `parley mcp serve args...`; it is closed when the test ends, and its
// stderr is logged if the test failed.
func (e *Env) Session(opts *mcp.ClientOptions, args ...string) *mcp.ClientSession {
	e.T.Helper()
	return e.SessionIn(e.Home, opts, args...)
}

// SessionIn is Session with `mcp serve` run in dir, as a client started in
// that directory runs it.
func (e *Env) SessionIn(dir string, opts *mcp.ClientOptions, args ...string) *mcp.ClientSession {
	e.T.Helper()
	c := e.Cmd(append([]string{"mcp", "serve"}, args...)...)
	c.Dir = dir
	stderr := &SyncBuffer{}
	c.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "parley-test", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, &mcp.CommandTransport{Command: c}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		e.T.Fatalf("connect mcp serve %v: %v", args, err)
	}
	e.T.Cleanup(func() {
		s.Close()
		if e.T.Failed() {
			e.T.Logf("mcp serve %v stderr:\n%s", args, stderr.String())
		}
	})
	return s
}

// SyncBuffer is a bytes.Buffer safe for a writer goroutine and a reader.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
