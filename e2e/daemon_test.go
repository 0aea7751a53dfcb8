package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/testenv"
)

func TestDaemonLifecycle(t *testing.T) {
	e := newEnv(t)
	out, _, code := e.Run("daemon", "status")
	if !strings.Contains(out, "not running") || code != 7 {
		t.Fatalf("status before start: got %q, exit %d; want not running, exit 7", out, code)
	}
	var down struct {
		Running *bool `json:"running"`
	}
	out, _, code = e.Run("daemon", "status", "--json")
	if err := json.Unmarshal([]byte(out), &down); err != nil || down.Running == nil || *down.Running || code != 7 {
		t.Fatalf("status --json before start: got %q, exit %d; want running false, exit 7", out, code)
	}
	out = e.Must("daemon", "start")
	if !strings.Contains(out, "started") {
		t.Fatalf("start: got %q", out)
	}
	pid := e.daemonPID()

	// The socket and the state directory are the owner's only.
	for path, want := range map[string]os.FileMode{e.home: 0o700, filepath.Join(e.home, "parley.sock"): 0o600, filepath.Join(e.home, "parley.db"): 0o600} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != want {
			t.Errorf("%s mode: got %o, want %o", path, got, want)
		}
	}
	var lock struct {
		PID       int      `json:"pid"`
		StartedAt string   `json:"startedAt"`
		Hostname  string   `json:"hostname"`
		UID       int      `json:"uid"`
		SockPath  string   `json:"sockPath"`
		Argv      []string `json:"argv"`
	}
	b, _ := os.ReadFile(filepath.Join(e.home, "parley.pid"))
	if err := json.Unmarshal(b, &lock); err != nil || lock.PID != pid || lock.SockPath != filepath.Join(e.home, "parley.sock") || lock.UID != os.Getuid() || len(lock.Argv) == 0 || lock.StartedAt == "" {
		t.Errorf("pid lock: got %s (%v)", b, err)
	}

	// A second start says it is already running, and changes nothing.
	_, errOut, code := e.Run("daemon", "start")
	if code == 0 || !strings.Contains(errOut, "already running") {
		t.Errorf("second start: exit %d, stderr %q; want an 'already running' error", code, errOut)
	}
	// So does a second foreground daemon, which must not steal the socket.
	_, errOut, code = e.Run("daemon", "run")
	if code == 0 || !strings.Contains(errOut, "already running") {
		t.Errorf("second run: exit %d, stderr %q; want an 'already running' error", code, errOut)
	}
	if got := e.daemonPID(); got != pid {
		t.Errorf("pid after second start: got %d, want %d", got, pid)
	}
	var st struct {
		Running bool `json:"running"`
		PID     int  `json:"pid"`
	}
	e.MustJSON(&st, "daemon", "status")
	if !st.Running || st.PID != pid {
		t.Errorf("status --json: got %+v, want running pid %d", st, pid)
	}

	// Stop cleans up the socket and the lock.
	e.Must("daemon", "stop")
	for _, f := range []string{"parley.sock", "parley.pid"} {
		if _, err := os.Stat(filepath.Join(e.home, f)); !os.IsNotExist(err) {
			t.Errorf("%s after stop: %v, want it gone", f, err)
		}
	}

	// A CLI command on a stopped daemon starts it.
	e.Must("join", "--workspace", "w", "--name", "a")
	if e.daemonPID() == pid {
		t.Errorf("daemon was not restarted")
	}
}

func TestDaemonStaleLockAndSocket(t *testing.T) {
	e := newEnv(t)
	e.Must("daemon", "start")
	e.kill9()
	// kill -9 leaves the lock and the socket behind.
	for _, f := range []string{"parley.sock", "parley.pid"} {
		if _, err := os.Stat(filepath.Join(e.home, f)); err != nil {
			t.Fatalf("%s after kill -9: %v, want it left behind", f, err)
		}
	}
	out := e.Must("daemon", "start")
	if !strings.Contains(out, "started") {
		t.Fatalf("start over a stale lock: got %q", out)
	}
	// A lock naming a live process that is not a daemon (and holds no lock) is stale too.
	e.Must("daemon", "stop")
	os.WriteFile(filepath.Join(e.home, "parley.pid"), []byte(fmt.Sprintf(`{"pid":%d,"sockPath":"x"}`, os.Getpid())), 0o600)
	os.WriteFile(filepath.Join(e.home, "parley.sock"), []byte("junk"), 0o600)
	e.Must("daemon", "start")
	e.Must("agents", "--workspace", "w")
}

func TestDaemonSignalsCleanUp(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			e := newEnv(t)
			c := e.Cmd("daemon", "run")
			stderr := &syncBuffer{}
			c.Stderr = stderr
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				if _, err := os.Stat(filepath.Join(e.home, "parley.sock")); err == nil {
					if _, _, code := e.Run("daemon", "status"); code == 0 {
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("daemon run did not come up: %s", stderr.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			c.Process.Signal(sig)
			done := make(chan error, 1)
			go func() { done <- c.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("daemon exit after %v: %v\n%s", sig, err, stderr.String())
				}
			case <-time.After(10 * time.Second):
				c.Process.Kill()
				t.Fatalf("daemon did not exit on %v", sig)
			}
			for _, f := range []string{"parley.sock", "parley.pid"} {
				if _, err := os.Stat(filepath.Join(e.home, f)); !os.IsNotExist(err) {
					t.Errorf("%s after %v: still there", f, sig)
				}
			}
			log, _ := os.ReadFile(filepath.Join(e.home, "daemon.log"))
			if !strings.Contains(string(log), "daemon stopped") {
				t.Errorf("daemon.log lacks the stop: %s", log)
			}
		})
	}
}

func TestMessagesSurviveRestartAndKill9(t *testing.T) {
	e := newEnv(t)
	e.Must("join", "--workspace", "w", "--name", "a")
	var ids []string
	for i := 0; i < 20; i++ {
		var r sendResult
		e.MustJSON(&r, "send", "--workspace", "w", "--agent", "a", "b", fmt.Sprintf("m%02d", i))
		ids = append(ids, r.MessageID)
		switch i {
		case 9:
			e.Must("daemon", "stop") // graceful
		case 14:
			e.kill9() // no chance to flush anything
		}
	}
	e.kill9()
	var c checkResult
	e.MustJSON(&c, "inbox", "--workspace", "w", "--agent", "b", "--limit", "100")
	if len(c.Messages) != 20 {
		t.Fatalf("after restarts: got %d messages, want 20", len(c.Messages))
	}
	for i, m := range c.Messages {
		if m.MessageID != ids[i] || m.Content != fmt.Sprintf("m%02d", i) {
			t.Errorf("message %d: got %s %q, want %s m%02d", i, m.MessageID, m.Content, ids[i], i)
		}
	}
	// Read state survives too: a consumed message stays consumed.
	e.kill9()
	e.MustJSON(&c, "inbox", "--workspace", "w", "--agent", "b")
	if len(c.Messages) != 0 {
		t.Errorf("after consuming and kill -9: got %d unread, want 0", len(c.Messages))
	}
}

func TestMalformedStdinKeepsServing(t *testing.T) {
	e := newEnv(t)
	c := e.Cmd("mcp", "serve", "--workspace", "w", "--agent", "raw")
	stdin, _ := c.StdinPipe()
	stdout, _ := c.StdoutPipe()
	stderr := &syncBuffer{}
	c.Stderr = stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Process.Kill()
	r := bufio.NewReader(stdout)
	send := func(line string) { io.WriteString(stdin, line+"\n") }
	recv := func() map[string]any {
		t.Helper()
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read stdout: %v (stderr %s)", err, stderr.String())
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("stdout line is not JSON: %q", line)
		}
		return m
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := recv(); m["id"] != float64(1) || m["result"] == nil {
		t.Fatalf("initialize: got %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":`) // cut short
	m := recv()
	if errObj, _ := m["error"].(map[string]any); m["id"] != nil || errObj == nil || errObj["code"] != float64(-32700) {
		t.Fatalf("malformed line: got %v, want a -32700 error with id null", m)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`)
	if m := recv(); m["id"] != float64(3) || m["result"] == nil {
		t.Fatalf("call after a malformed line: got %v", m)
	}
	for _, tt := range []struct {
		line string
		id   float64
		code float64
	}{
		{`{"jsonrpc":"2.0","id":4,"method":"no/such/method"}`, 4, -32601},
		{`{"jsonrpc":"2.0","id":5}`, 5, -32600},
		{`{"jsonrpc":"1.0","id":6,"method":"ping"}`, 6, -32600},
	} {
		send(tt.line)
		m := recv()
		errObj, _ := m["error"].(map[string]any)
		if m["id"] != tt.id || errObj == nil || errObj["code"] != tt.code {
			t.Errorf("%s: got %v, want error %v with id %v", tt.line, m, tt.code, tt.id)
		}
	}
	stdin.Close()
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("mcp serve did not exit when stdin closed")
	}
	if strings.Contains(stderr.String(), `"jsonrpc"`) && strings.Contains(stderr.String(), "whoami") {
		t.Errorf("stderr echoes protocol traffic: %s", stderr.String())
	}
}

func TestDaemonRefusesForeignOrigin(t *testing.T) {
	e := newEnv(t)
	e.Must("daemon", "start")
	hc := e.httpClient()
	for _, path := range []string{"/api/v1/agents", "/mcp"} {
		req, _ := http.NewRequestWithContext(context.Background(), "GET", "http://parley"+path, nil)
		req.Header.Set("Origin", "https://evil.example")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s with a foreign Origin: got %d, want 403", path, resp.StatusCode)
		}
	}
	// Without an Origin the API serves.
	resp, err := hc.Get("http://parley/api/v1/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("health: got %d", resp.StatusCode)
	}
	// An oversized API body is refused before it is parsed.
	big := strings.NewReader(`{"to":"b","content":"` + strings.Repeat("x", 5<<20) + `"}`)
	req, _ := http.NewRequest("POST", "http://parley/api/v1/messages", big)
	req.Header.Set("Parley-Agent", "a")
	resp, err = hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("5 MiB API body: got %d, want 413", resp.StatusCode)
	}
}

func TestCLI(t *testing.T) {
	e := newEnv(t)
	// Without a running daemon, read commands start one.
	e.Must("join", "--workspace", "w", "--name", "alice", "--role", "planner")
	e.Must("join", "--workspace", "w", "--name", "bob", "--role", "reviewer")
	// The identity file is written in the directory's root (here: e.home).
	if _, err := os.Stat(filepath.Join(e.home, ".parley", "identities", "alice.json")); err != nil {
		t.Fatalf("identity file: %v", err)
	}
	// Two identities: commands that need one must be told which.
	_, errOut, code := e.Run("inbox", "--workspace", "w")
	if code == 0 || !strings.Contains(errOut, "several identities") {
		t.Errorf("inbox with two identities: exit %d %q", code, errOut)
	}
	// PARLEY_AGENT picks one; --agent wins over it.
	e.extra = append(e.extra, "PARLEY_AGENT=alice", "PARLEY_WORKSPACE=w")
	e.Must("send", "bob", "hello bob")
	e.Must("send", "--priority", "critical", "@reviewer", "fire")
	var who struct {
		Name   string `json:"name"`
		Source string `json:"source"`
	}
	e.MustJSON(&who, "whoami")
	if who.Name != "alice" || who.Source != "env" {
		t.Errorf("whoami: got %+v", who)
	}
	var c checkResult
	e.MustJSON(&c, "inbox", "--agent", "bob", "--peek")
	if len(c.Messages) != 2 || c.Messages[0].Content != "fire" {
		t.Fatalf("peek: got %+v, want fire first", c.Messages)
	}
	out := e.Must("inbox", "--agent", "bob")
	if !strings.Contains(out, "fire") || !strings.Contains(out, "hello bob") {
		t.Errorf("inbox text: %q", out)
	}
	out = e.Must("inbox", "--agent", "bob")
	if !strings.Contains(out, "no unread messages") {
		t.Errorf("inbox after reading: %q", out)
	}
	// wait: exit 3 on timeout, the message otherwise.
	if _, _, code := e.Run("wait", "--agent", "bob", "--timeout", "1s"); code != 3 {
		t.Errorf("wait timeout: exit %d, want 3", code)
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		e.Run("send", "bob", "late news")
	}()
	var w waitResult
	e.MustJSON(&w, "wait", "--agent", "bob", "--timeout", "10s")
	if w.Message == nil || w.Message.Content != "late news" {
		t.Errorf("wait: got %+v", w)
	}
	// Status and groups.
	e.Must("status", "--agent", "bob", "work")
	var st struct {
		WorkStatus string `json:"work_status"`
		Unread     int    `json:"unread"`
	}
	e.MustJSON(&st, "status", "--agent", "bob")
	if st.WorkStatus != "work" || st.Unread != 0 {
		t.Errorf("status: got %+v", st)
	}
	e.Must("group", "create", "reviewers", "-d", "people who review")
	e.Must("group", "add", "reviewers", "--role", "reviewer")
	var g struct {
		Members        []struct{ Type, ID string }
		ExpandedAgents []string `json:"expanded_agents"`
	}
	e.MustJSON(&g, "group", "show", "reviewers", "--expand")
	if len(g.Members) != 1 || g.Members[0].Type != "role" || len(g.ExpandedAgents) != 1 {
		t.Errorf("group show: got %+v", g)
	}
	var gl struct{ Groups []struct{ Name string } }
	e.MustJSON(&gl, "group", "list")
	if len(gl.Groups) != 2 {
		t.Errorf("group list: got %+v", gl)
	}
	e.Must("group", "remove", "reviewers", "--role", "reviewer")
	e.Must("group", "delete", "reviewers")
	// Errors say what to do.
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"send", "bob", "x", "--priority", "urgent"}, "invalid priority"},
		{[]string{"send", "@nobody", "x"}, "matches no group"},
		{[]string{"send", "bob", ""}, "content must not be empty"},
		{[]string{"group", "delete", "everyone"}, "cannot be deleted"},
		{[]string{"group", "show", "ghosts"}, "no group named"},
		{[]string{"wait", "--timeout", "11m"}, "out of range"},
		{[]string{"status", "sleeping"}, "invalid status"},
		{[]string{"send", "bob"}, "accepts 2 arg"},
	}
	for _, tt := range tests {
		_, errOut, code := e.Run(tt.args...)
		if code == 0 || !strings.Contains(errOut, tt.want) {
			t.Errorf("parley %v: exit %d, stderr %q; want an error with %q", tt.args, code, errOut, tt.want)
		}
	}
	// A dead daemon is restarted on demand; if it cannot be, the error says what to do.
	e.kill9()
	e.Must("agents")
}

func TestCLIWithoutDaemonBinary(t *testing.T) {
	// A socket path that is too long is refused with a clear message.
	long := "/tmp/" + strings.Repeat("d", 120)
	c := exec.Command(bin, "agents")
	c.Env = []string{"PARLEY_HOME=" + long, "PATH=" + os.Getenv("PATH"), testenv.GoRace()}
	out, err := c.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "PARLEY_HOME to a shorter directory") {
		t.Errorf("long PARLEY_HOME: %v %s", err, out)
	}
}
