package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/store/postgres/pgtest"
)

// nobody is another user's uid, for the cross-user cases.
const nobody = 65534

// needRoot skips a cross-user case unless the test may give files away.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("cross-user case: needs root to make files owned by uid %d (running as uid %d)", nobody, os.Geteuid())
	}
}

// TestSharedHomeRefused: a PARLEY_HOME that another user prepared, with
// daemon.log a link to the victim's ~/.bashrc, is refused before anything is
// written in it.
func TestSharedHomeRefused(t *testing.T) {
	needRoot(t)
	e := newEnv(t)
	victim := filepath.Join(t.TempDir(), "bashrc")
	os.WriteFile(victim, []byte("# precious\n"), 0o600)
	if err := os.Symlink(victim, filepath.Join(e.home, "daemon.log")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(e.home, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"daemon", "start"}, {"daemon", "run"}, {"agents", "--workspace", "w"}} {
		_, errOut, code := e.Run(args...)
		if code == 0 || !strings.Contains(errOut, "belongs to uid 65534") {
			t.Errorf("parley %v in someone else's PARLEY_HOME: exit %d %q, want a refusal naming the owner", args, code, errOut)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "# precious\n" {
		t.Errorf("the link's target: got %q, want it untouched", b)
	}
	ents, _ := os.ReadDir(e.home)
	if len(ents) != 1 {
		t.Errorf("files written in the refused directory: %v", ents)
	}

	// Our own directory with a planted log link: the daemon refuses the link.
	own := newEnv(t)
	os.Symlink(victim, filepath.Join(own.home, "daemon.log"))
	if _, errOut, code := own.Run("daemon", "start"); code == 0 || !strings.Contains(errOut, "symbolic link") {
		t.Errorf("daemon.log a link: exit %d %q, want a refusal", code, errOut)
	}
	if b, _ := os.ReadFile(victim); string(b) != "# precious\n" {
		t.Errorf("the link's target: got %q, want it untouched", b)
	}
}

// TestPlantedSocketRefused: a socket in a directory another user owns is not
// dialled, so a fake daemon captures nothing.
func TestPlantedSocketRefused(t *testing.T) {
	needRoot(t)
	e := newEnv(t)
	ln, err := net.Listen("unix", filepath.Join(e.home, "parley.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dialled := make(chan struct{}, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			dialled <- struct{}{}
			c.Close()
		}
	}()
	os.Chown(filepath.Join(e.home, "parley.sock"), nobody, nobody)
	os.Chown(e.home, nobody, nobody)
	_, errOut, code := e.Run("send", "--workspace", "w", "--agent", "alice", "bob", "the secret plan")
	if code == 0 || !strings.Contains(errOut, "belongs to uid 65534") {
		t.Errorf("send over a planted socket: exit %d %q, want a refusal", code, errOut)
	}
	select {
	case <-dialled:
		t.Error("the CLI connected to a socket it does not own")
	default:
	}

	// Our own directory, someone else's socket.
	os.Chown(e.home, 0, 0)
	_, errOut, code = e.Run("send", "--workspace", "w", "--agent", "alice", "bob", "the secret plan")
	if code == 0 || !strings.Contains(errOut, "parley.sock belongs to uid 65534") {
		t.Errorf("send over someone else's socket: exit %d %q, want a refusal", code, errOut)
	}
	select {
	case <-dialled:
		t.Error("the CLI connected to a socket it does not own")
	default:
	}
}

// TestForeignIdentityWorkspace: an identity file shipped in a repository that
// names another workspace does not silently join it; the user can allow it.
func TestForeignIdentityWorkspace(t *testing.T) {
	e := newEnv(t)
	repo := t.TempDir()
	os.Mkdir(filepath.Join(repo, ".git"), 0o755)
	ids := filepath.Join(repo, ".parley", "identities")
	os.MkdirAll(ids, 0o755)
	os.WriteFile(filepath.Join(ids, "bob.json"), []byte(`{"name":"bob","role":"dev","workspace":"their-team"}`), 0o644)
	run := func(extra []string, args ...string) (string, string, int) {
		c := osexec.Command(bin, args...)
		c.Env, c.Dir = append(e.environ(), extra...), repo
		var out, errb strings.Builder
		c.Stdout, c.Stderr = &out, &errb
		err := c.Run()
		if ee, ok := err.(*osexec.ExitError); ok {
			return out.String(), errb.String(), ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), 0
	}
	for _, args := range [][]string{{"whoami"}, {"agents"}} {
		_, errOut, code := run(nil, args...)
		if code == 0 || !strings.Contains(errOut, `names workspace "their-team"`) || !strings.Contains(errOut, "PARLEY_TRUST_IDENTITY_WORKSPACE=1") {
			t.Errorf("parley %v: exit %d %q, want a refusal that says how to allow it", args, code, errOut)
		}
	}
	// A client session there takes no person's file at all: it speaks as
	// its own name, in this repository's workspace, and says why.
	if _, errOut, code := run(nil, "mcp", "serve"); code != 0 || !strings.Contains(errOut, "bob is a person's") || strings.Contains(errOut, "their-team") {
		t.Errorf("parley mcp serve: exit %d %q, want it to leave bob's file alone and say so", code, errOut)
	}
	e.Must("join", "--workspace", "their-team", "--name", "carol")
	out, errOut, code := run([]string{"PARLEY_TRUST_IDENTITY_WORKSPACE=1"}, "agents", "--json")
	var list struct {
		Agents []struct{ Name string } `json:"agents"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Agents) != 1 || list.Agents[0].Name != "carol" {
		t.Errorf("allowed: exit %d %q %q, want their-team's agents", code, out, errOut)
	}
}

// TestTerminalEscapesNeutralized: escape sequences in a message reach the
// terminal as visible text in every command that prints messages, and --json
// still carries the content exactly.
func TestTerminalEscapesNeutralized(t *testing.T) {
	e := newEnv(t)
	e.Must("daemon", "start")
	const evil = "\x1b]0;pwned\x07\x1b[2J\x1b[Hall good\rFAKE \u009b31m\u202eevil"
	watch := e.Cmd("watch", "--workspace", "w")
	stdout, _ := watch.StdoutPipe()
	stderr, _ := watch.StderrPipe()
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { watch.Process.Kill(); watch.Wait() })
	if line, err := bufio.NewReader(stderr).ReadString('\n'); err != nil || !strings.HasPrefix(line, "watching") {
		t.Fatalf("watch: %q %v", line, err)
	}
	e.Must("send", "--workspace", "w", "--agent", "mallory", "alice", evil)
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		t.Fatalf("watch ended: %v", sc.Err())
	}
	outputs := map[string]string{"watch": sc.Text()}
	// In this order: wait takes the message, so the peek must come first.
	for _, c := range []struct {
		name string
		args []string
	}{
		{"inbox", []string{"inbox", "--workspace", "w", "--agent", "alice", "--peek"}},
		{"history", []string{"history", "--workspace", "w", "--agent", "alice"}},
		{"wait", []string{"wait", "--workspace", "w", "--agent", "alice", "--timeout", "5s"}},
	} {
		outputs[c.name] = e.Must(c.args...)
	}
	for name, out := range outputs {
		if strings.ContainsAny(out, "\x1b\x07\r\u009b\u202e") {
			t.Errorf("%s printed raw control characters: %q", name, out)
		}
		if !strings.Contains(out, `\u001b]0;pwned\u0007`) {
			t.Errorf("%s: got %q, want the escape shown as text", name, out)
		}
	}
	var h struct {
		Messages []struct{ Content string } `json:"messages"`
	}
	e.MustJSON(&h, "history", "--workspace", "w", "--agent", "alice")
	if len(h.Messages) != 1 || h.Messages[0].Content != evil {
		t.Errorf("history --json: got %+v, want the content exactly", h.Messages)
	}
}

// TestConfusableNameRefused: a homoglyph of an existing agent's name is
// refused at join, with the character that differs named.
func TestConfusableNameRefused(t *testing.T) {
	e := newEnv(t)
	e.Must("join", "--workspace", "w", "--name", "bob")
	_, errOut, code := e.Run("join", "--workspace", "w", "--name", "bоb")
	if code == 0 || !strings.Contains(errOut, `looks like the existing agent "bob"`) || !strings.Contains(errOut, "Cyrillic") {
		t.Errorf("join bоb: exit %d %q, want a refusal", code, errOut)
	}
	var list struct {
		Agents []struct{ Name string } `json:"agents"`
	}
	e.MustJSON(&list, "agents", "--workspace", "w")
	if len(list.Agents) != 1 {
		t.Errorf("agents: got %+v, want bob alone", list.Agents)
	}
}

// TestRetentionPrunesOnline: with retention set, messages every recipient
// has read are pruned once past it while the daemon runs; unread ones stay.
func TestRetentionPrunesOnline(t *testing.T) {
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			e := newEnv(t, storeEnv(t, store)...)
			os.WriteFile(filepath.Join(e.home, "config.toml"), []byte("retention = \"2s\"\n"), 0o600)
			e.Must("daemon", "start")
			pid := e.daemonPID()
			e.Must("send", "--workspace", "w", "--agent", "alice", "bob", "read soon")
			e.Must("send", "--workspace", "w", "--agent", "alice", "carol", "never read")
			e.Must("inbox", "--workspace", "w", "--agent", "bob")
			type history struct {
				Messages []struct{ Content string } `json:"messages"`
			}
			var h history
			waitFor(t, 20*time.Second, "the read message to be pruned", func() (bool, string) {
				h = history{}
				e.mustAPI("GET", "/messages", "w", "", nil, &h)
				return len(h.Messages) == 1, fmt.Sprintf("history holds %d messages, want 1", len(h.Messages))
			})
			if h.Messages[0].Content != "never read" {
				t.Fatalf("kept %q, want the unread message", h.Messages[0].Content)
			}
			if e.daemonPID() != pid {
				t.Error("the daemon restarted; want pruning online")
			}
			if b, _ := os.ReadFile(filepath.Join(e.home, "daemon.log")); !strings.Contains(string(b), "purged read messages") {
				t.Errorf("daemon.log does not report the purge:\n%s", b)
			}
		})
	}
}

// TestBackupRefusedOnPostgres: backup and restore copy the SQLite file; on
// PostgreSQL they say so and point to pg_dump, and write nothing.
func TestBackupRefusedOnPostgres(t *testing.T) {
	e := newEnv(t, storeEnv(t, "postgres")...)
	file := filepath.Join(e.home, "copy.db")
	for _, op := range []string{"backup", "restore"} {
		_, errOut, code := e.Run(op, file)
		if code == 0 || !strings.Contains(errOut, "pg_dump") || !strings.Contains(errOut, "parley "+op) {
			t.Errorf("%s on PostgreSQL: exit %d, stderr %q; want a refusal pointing to pg_dump", op, code, errOut)
		}
	}
	if _, err := os.Stat(file); err == nil {
		t.Error("backup on PostgreSQL wrote a file")
	}
}

// storeEnv is the environment that selects store: SQLite, or a PostgreSQL
// database of the test's own (skipped where PostgreSQL is not installed).
func storeEnv(t *testing.T, store string) []string {
	if store == "postgres" {
		return []string{"PARLEY_STORE=" + pgtest.Database(t)}
	}
	return nil
}

type doctorOut struct {
	Findings []struct{ Check, Status, Detail, Fix string } `json:"findings"`
	Failed   int                                           `json:"failed"`
}

func (e *env) doctor() (doctorOut, int) {
	e.t.Helper()
	out, errOut, code := e.Run("doctor", "--json")
	var d doctorOut
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		e.t.Fatalf("doctor --json: %v\n%s\n%s", err, out, errOut)
	}
	return d, code
}

func (d doctorOut) find(check string) (status, detail, fix string) {
	for _, f := range d.Findings {
		if f.Check == check {
			return f.Status, f.Detail, f.Fix
		}
	}
	return "", "", ""
}

// TestDoctor: a healthy installation passes; each planted problem is found,
// with a fix, and fails the exit status.
func TestDoctor(t *testing.T) {
	e := newEnv(t)
	e.Must("join", "--workspace", "w", "--name", "alice")
	e.Must("send", "--workspace", "w", "--agent", "alice", "bob", "hi")
	d, code := e.doctor()
	for _, check := range []string{"state directory", "config.toml", "daemon", "socket", "database", "identity"} {
		if st, detail, _ := d.find(check); st != "ok" {
			t.Errorf("healthy %s: got %s %q, want ok", check, st, detail)
		}
	}
	if code != 0 || d.Failed != 0 {
		t.Errorf("healthy: exit %d, %d failed", code, d.Failed)
	}
	// A zero-flag Codex config names no agent: doctor says who speaks.
	e.extra = append(e.extra, "CODEX_HOME="+filepath.Join(e.home, "codex"))
	e.Must("init", "codex", "--yes")
	d, _ = e.doctor()
	if st, detail, _ := d.find("client codex"); st != "ok" || !strings.Contains(detail, "each session as an agent of its own (codex-") {
		t.Errorf("client codex: %s %q, want ok, each session its own agent", st, detail)
	}
	e.extra = nil

	for _, tt := range []struct {
		name, check, want string
		plant, undo       func()
	}{
		{"home writable by others", "state directory", "writable by other users",
			func() { os.Chmod(e.home, 0o777) }, func() { os.Chmod(e.home, 0o700) }},
		{"log a link", "daemon.log", "symbolic link",
			func() {
				os.Rename(filepath.Join(e.home, "daemon.log"), filepath.Join(e.home, "log.keep"))
				os.Symlink("/etc/passwd", filepath.Join(e.home, "daemon.log"))
			},
			func() {
				os.Remove(filepath.Join(e.home, "daemon.log"))
				os.Rename(filepath.Join(e.home, "log.keep"), filepath.Join(e.home, "daemon.log"))
			}},
		{"bad config", "config.toml", "unknown key",
			func() { os.WriteFile(filepath.Join(e.home, "config.toml"), []byte("retentoin = \"1d\"\n"), 0o600) },
			func() { os.Remove(filepath.Join(e.home, "config.toml")) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.plant()
			defer tt.undo()
			d, code := e.doctor()
			st, detail, fix := d.find(tt.check)
			if st != "fail" || !strings.Contains(detail, tt.want) || fix == "" || code != 1 {
				t.Errorf("%s: got %s %q (fix %q), exit %d; want a failure with %q and a fix", tt.check, st, detail, fix, code, tt.want)
			}
		})
	}
	// A database damaged in the middle, where the start-up check does not
	// look: doctor reads every page.
	e.Must("daemon", "stop")
	db := filepath.Join(e.home, "parley.db")
	for i := range 300 {
		e.Must("send", "--workspace", "w", "--agent", "alice", "bob", fmt.Sprintf("%d %s", i, strings.Repeat("x", 2000)))
	}
	e.Must("daemon", "stop")
	b, _ := os.ReadFile(db)
	mid := len(b) / 2 / 4096 * 4096
	copy(b[mid:mid+4096], bytes.Repeat([]byte{0xAA}, 4096))
	os.WriteFile(db, b, 0o600)
	d, code = e.doctor()
	if st, detail, _ := d.find("database"); st != "fail" || !strings.Contains(detail, "corrupt") || code != 1 {
		t.Errorf("damaged database: got %s %q exit %d, want a failure", st, detail, code)
	}
}

// TestBackupRestore: a backup taken while the daemon runs and takes sends is
// a consistent Parley database; restore refuses a running daemon, a foreign
// file and a newer one, and puts the backup back.
func TestBackupRestore(t *testing.T) {
	e := newEnv(t)
	for i := range 20 {
		e.Must("send", "--workspace", "w", "--agent", "alice", "bob", fmt.Sprintf("before %d", i))
	}
	// Sends go on during the backup.
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				done <- n
				return
			default:
			}
			if _, _, code := e.Run("send", "--workspace", "w", "--agent", "alice", "bob", "during"); code == 0 {
				n++
			}
		}
	}()
	backup := filepath.Join(t.TempDir(), "b.db")
	e.Must("backup", backup)
	close(stop)
	during := <-done
	if _, errOut, code := e.Run("backup", backup); code == 0 || !strings.Contains(errOut, "exists") {
		t.Errorf("backup over an existing file: exit %d %q", code, errOut)
	}
	if _, errOut, code := e.Run("restore", backup); code == 0 || !strings.Contains(errOut, "daemon is running") {
		t.Errorf("restore beside a running daemon: exit %d %q", code, errOut)
	}
	e.Must("send", "--workspace", "w", "--agent", "alice", "bob", "after the backup")
	e.Must("daemon", "stop")

	foreign := filepath.Join(t.TempDir(), "notes.db")
	os.WriteFile(foreign, []byte("SQLite format 3\x00 but not really, and long enough"), 0o600)
	if _, errOut, code := e.Run("restore", foreign); code == 0 || !strings.Contains(errOut, "refusing") {
		t.Errorf("restore a foreign file: exit %d %q", code, errOut)
	}
	newer := filepath.Join(t.TempDir(), "newer.db")
	b, _ := os.ReadFile(backup)
	binary.BigEndian.PutUint32(b[60:64], 999) // the header's user_version: the schema version
	os.WriteFile(newer, b, 0o600)
	if _, errOut, code := e.Run("restore", newer); code == 0 || !strings.Contains(errOut, "newer than this parley") {
		t.Errorf("restore a newer file: exit %d %q", code, errOut)
	}

	out := e.Must("restore", backup)
	if !strings.Contains(out, "before-restore") {
		t.Errorf("restore: got %q, want where the old database went", out)
	}
	var h struct {
		Messages []struct{ Content string } `json:"messages"`
	}
	e.MustJSON(&h, "history", "--workspace", "w", "--limit", "1000")
	before, got := 0, map[string]bool{}
	for _, m := range h.Messages {
		got[m.Content] = true
		if strings.HasPrefix(m.Content, "before") {
			before++
		}
	}
	if before != 20 || got["after the backup"] || len(h.Messages) > 20+during {
		t.Errorf("restored history: %d messages, %d of the 20 before, after-the-backup %v (sends during: %d)", len(h.Messages), before, got["after the backup"], during)
	}
}

// TestLimitsCountEverything: metadata counts towards the size limit, and a
// check with a high limit over many large messages returns about 4 MiB
// and says how many remain, instead of building one response of them all.
func TestLimitsCountEverything(t *testing.T) {
	e := newEnv(t)
	e.Must("daemon", "start")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	hc := e.httpClient()
	code, body, err := e.apiCall(ctx, hc, "POST", "/messages", "w", "mallory", map[string]any{
		"to": "bob", "content": "hi", "metadata": map[string]string{"k": strings.Repeat("m", 300<<10)}})
	if err != nil || code != 413 || !strings.Contains(string(body), "metadata") {
		t.Errorf("300 KiB of metadata: got %d %s %v, want 413 naming what counts", code, body, err)
	}
	const n = 40
	for i := range n {
		code, body, err := e.apiCall(ctx, hc, "POST", "/messages", "w", "alice", map[string]any{"to": "bob", "content": fmt.Sprintf("%02d%s", i, strings.Repeat("x", 250<<10))})
		if err != nil || code != 200 {
			t.Fatalf("send %d: %d %s %v", i, code, body, err)
		}
	}
	code, body, err = e.apiCall(ctx, hc, "POST", "/inbox/check", "w", "bob", map[string]any{"limit": 1000})
	if err != nil || code != 200 {
		t.Fatalf("check: %d %v", code, err)
	}
	var res struct {
		Messages  []struct{ Content string } `json:"messages"`
		Remaining int                        `json:"remaining"`
	}
	json.Unmarshal(body, &res)
	t.Logf("check(limit=1000) over %d x 250 KiB: %d bytes, %d messages, %d remaining", n, len(body), len(res.Messages), res.Remaining)
	if len(body) > 6<<20 || len(res.Messages) == 0 || len(res.Messages)+res.Remaining != n {
		t.Errorf("check: %d bytes with %d messages and %d remaining; want at most ~4 MiB and the rest counted", len(body), len(res.Messages), res.Remaining)
	}
}

// TestNoArgumentReachesAnotherWorkspace: the table is built from tools/list
// of every profile, so it covers every argument there is. Each tool is called
// from a session bound to alpha with every argument that names a session or
// a workspace set to beta (and to beta's Sidechat session), and with
// workspace/all arguments smuggled in; nothing of beta may come back, and
// beta is unchanged after. Before, sidechat's session argument was a
// workspace name: receive_message(session="beta", as="bob") read beta.
func TestNoArgumentReachesAnotherWorkspace(t *testing.T) {
	e := newEnv(t)
	e.Must("daemon", "start")
	const alpha, beta = "alpha", "beta"
	e.mustAPI("POST", "/agents", beta, "", map[string]any{"name": "bob", "role": "dev"}, nil)
	for i := range 3 {
		e.mustAPI("POST", "/messages", beta, "carol", map[string]any{"to": "bob", "content": fmt.Sprintf("beta secret %d", i)}, nil)
	}
	// Beta's own Sidechat session s, with a message for bob.
	betaSC := e.Session(nil, "--workspace", beta, "--profile", "sidechat")
	mustCall(t, betaSC, "send_message", map[string]any{"session": "s", "to": "bob", "message": map[string]any{"secret": "beta secret sc"}}, nil)

	leaks := func(s string) bool { return strings.Contains(s, "beta secret") || strings.Contains(s, `"count":3`) }
	sessionArgs := map[string]bool{"session": true, "workspace": true, "project": true, "session_id": true}
	profiles := []string{"native", "lean", "sidechat", "agentmail", "manager", "self", "gateway"}
	calls := 0
	for _, p := range profiles {
		c := e.Cmd("mcp", "serve", "--workspace", alpha, "--agent", "mallory", "--profile", p)
		client := mcp.NewClient(&mcp.Implementation{Name: "iso", Version: "1"}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		s, err := client.Connect(ctx, &mcp.CommandTransport{Command: c}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		cancel()
		if err != nil {
			t.Logf("profile %s: not available (%v)", p, err)
			continue
		}
		defer s.Close()
		tools, err := s.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range tools.Tools {
			if strings.Contains(tl.Name, "wait") || tl.Name == "request_permission" || tl.Name == "kill_agent" {
				continue // blocking or destructive in alpha; no session argument
			}
			b, _ := json.Marshal(tl.InputSchema)
			var schema struct {
				Properties map[string]json.RawMessage `json:"properties"`
			}
			json.Unmarshal(b, &schema)
			named := false
			base := map[string]any{}
			for prop := range schema.Properties {
				switch {
				case sessionArgs[prop]:
					named = true
				case prop == "as" || prop == "agent" || prop == "to" || prop == "recipient":
					base[prop] = "bob"
				case prop == "message" && p == "sidechat":
					base[prop] = map[string]any{"x": 1}
				case prop == "timeout":
					base[prop] = 0
				}
			}
			var variants []map[string]any
			if named {
				for _, v := range []string{beta, "s", hub.SidechatWorkspace(beta, "s"), alpha} {
					args := maps.Clone(base)
					for prop := range schema.Properties {
						if sessionArgs[prop] {
							args[prop] = v
						}
					}
					variants = append(variants, args)
				}
			}
			// Arguments the schema does not have, smuggled in.
			smuggled := maps.Clone(base)
			smuggled["workspace"], smuggled["all"], smuggled["session"] = beta, true, beta
			variants = append(variants, smuggled)
			for _, args := range variants {
				calls++
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tl.Name, Arguments: args})
				cancel()
				if err != nil {
					continue // refused as a malformed call: nothing reached
				}
				out, _ := json.Marshal(res)
				if leaks(string(out)) {
					t.Errorf("profile %s: %s(%v) from alpha reaches beta: %s", p, tl.Name, args, out)
				}
			}
		}
	}
	t.Logf("%d calls", calls)
	var inbox struct {
		Messages []struct{ Content string } `json:"messages"`
	}
	e.mustAPI("GET", "/inbox?limit=100", beta, "bob", nil, &inbox)
	if len(inbox.Messages) != 3 {
		t.Errorf("beta bob's inbox after alpha's calls: got %d messages, want its 3", len(inbox.Messages))
	}
	var has struct {
		Count int `json:"count"`
	}
	mustCall(t, betaSC, "has_messages", map[string]any{"session": "s", "agent": "bob"}, &has)
	if has.Count != 1 {
		t.Errorf("beta's Sidechat session s after alpha's calls: got %d messages for bob, want 1", has.Count)
	}
}

// TestPurge: parley purge deletes old read messages while the daemon runs,
// keeps unread ones, and refuses a bad age.
func TestPurge(t *testing.T) {
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			e := newEnv(t, storeEnv(t, store)...)
			e.Must("send", "--workspace", "w", "--agent", "alice", "bob", "read soon")
			e.Must("send", "--workspace", "w", "--agent", "alice", "carol", "never read")
			e.Must("inbox", "--workspace", "w", "--agent", "bob")
			if _, errOut, code := e.Run("purge", "--older-than", "forever"); code != 2 || !strings.Contains(errOut, "invalid age") {
				t.Errorf("purge --older-than forever: exit %d %q, want 2 and the reason", code, errOut)
			}
			waitFor(t, 20*time.Second, "a purge of the read message", func() (bool, string) {
				var res struct{ Messages int }
				e.MustJSON(&res, "purge", "--older-than", "1s")
				if res.Messages > 1 {
					t.Fatalf("purge: got %d messages purged, want the read one once it is a second old", res.Messages)
				}
				return res.Messages == 1, fmt.Sprintf("the last purge took %d messages, want 1", res.Messages)
			})
			var h struct {
				Messages []struct{ Content string } `json:"messages"`
			}
			e.MustJSON(&h, "history", "--workspace", "w")
			if len(h.Messages) != 1 || h.Messages[0].Content != "never read" {
				t.Errorf("history after purge: got %+v, want the unread message alone", h.Messages)
			}
		})
	}
}

// TestAPIRefusesBadInput: the JSON API answers 400, saying what is wrong, to
// trailing data, negative limits, invalid names and out-of-range numbers;
// an oversized send over MCP is the tool error, not a protocol error.
func TestAPIRefusesBadInput(t *testing.T) {
	e := newEnv(t)
	e.Must("daemon", "start")
	hc := e.httpClient()
	raw := func(method, path, agent, body string) (int, string) {
		req, _ := http.NewRequest(method, "http://parley/api/v1"+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Parley-Workspace", "w")
		if agent != "" {
			req.Header.Set("Parley-Agent", agent)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tt := range []struct{ name, method, path, agent, body, want string }{
		{"trailing data", "POST", "/messages", "a", `{"to":"b","content":"x"} garbage`, "after"},
		{"second object", "POST", "/messages", "a", `{"to":"b","content":"x"}{"to":"c","content":"y"}`, "after"},
		{"negative limit", "POST", "/inbox/check", "b", `{"limit":-100}`, "negative"},
		{"negative limit in query", "GET", "/inbox?limit=-5", "b", ``, "negative"},
		{"invalid agent on check", "POST", "/inbox/check", "b\u202e", `{}`, "invalid"},
		{"invalid agent on peek", "GET", "/inbox", "../x", ``, "invalid"},
		{"invalid agent on wait", "POST", "/inbox/wait", "a b", `{"timeout":1}`, "invalid"},
		{"huge timeout", "POST", "/inbox/wait", "b", `{"timeout":9223372036854775807}`, "timeout"},
		{"timeout past int64", "POST", "/inbox/wait", "b", `{"timeout":92233720368547758070}`, "timeout"},
		{"negative timeout", "POST", "/inbox/wait", "b", `{"timeout":-1}`, "timeout"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body := raw(tt.method, tt.path, tt.agent, tt.body)
			if code != 400 || !strings.Contains(strings.ToLower(body), tt.want) {
				t.Errorf("%s %s %s: got %d %s, want 400 saying %q", tt.method, tt.path, tt.body, code, body, tt.want)
			}
		})
	}
	if n := len(e.Must("history", "--workspace", "w", "--json")); n > 30 {
		t.Errorf("a refused send was stored: history %d bytes", n)
	}
	// 5 MB of content over MCP: the tool error the README promises.
	s := e.Session(nil, "--workspace", "w", "--agent", "a")
	res := call(t, s, "send_message", map[string]any{"to": "b", "content": strings.Repeat("x", 5<<20)}, nil)
	if !res.IsError || !strings.Contains(text(res), "limit") {
		t.Errorf("5 MB send over MCP: got %s, want a tool error naming the limit", text(res))
	}
}
