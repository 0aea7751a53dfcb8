package e2e

// The attention benchmark per receiver mode (scripts/bench is not changed;
// run it with go test): the real Claude Code from test/npm in tmux, set up
// by `parley init claude`, the model replaced by the stand-in, in each of
//
//	default       --permission-mode default
//	bypass-accept bypassPermissions, the user's settings say
//	              "crossSessionInbound": "accept" (what doctor advises)
//	bypass-held   bypassPermissions without accept: every letter is held
//	              for the person (heldLatency; no race)
//	busy          default, each letter sent while the model's Bash tool
//	              sleeps 2 s: it rides in the request after the tool's result
//
// Per mode: send_message -> the model request carrying the letter, beside
// the bare door (a letter written straight into the session's socket) to
// the same point, alternating in one run; then the busy-to-idle race
// (attentionRig.race) with, beside lost / late / duplicated, the copies
// that read seen while no model request carried a letter naming them
// (falsely seen).
//
//	go test ./e2e -run '^$' -bench BenchmarkAttentionModes -benchtime 1x -timeout 60m
//	PARLEY_ATTENTION_N=20 PARLEY_ATTENTION_RACE=100 (the defaults here)

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/door"
	"github.com/parley-dev/parley/internal/testenv/standin"
	"github.com/parley-dev/parley/internal/testenv/tmuxcli"
)

func BenchmarkAttentionModes(b *testing.B) {
	for _, mode := range []string{"default", "bypass-accept", "bypass-held", "busy"} {
		b.Run(mode, func(b *testing.B) { benchClaudeMode(b, mode) })
	}
	b.Run("codex-not-loaded", benchCodexNotLoaded)
}

func benchClaudeMode(b *testing.B, mode string) {
	n, raceN := benchEnvInt("PARLEY_ATTENTION_N", 20), benchEnvInt("PARLEY_ATTENTION_RACE", 100)
	e := newEnv(b)
	repo := benchClaudeRepo(b, e, `{"enabledMcpjsonServers":["parley"],"permissions":{"allow":["Bash"]}}`)
	tk := newTokens()
	r := &replies{tk: tk}
	var mu sync.Mutex
	sleeps := 0
	s := standin.Anthropic(b, func(q *standin.MessagesRequest) []standin.Block {
		tail := q.Tail()
		if strings.Contains(tail, "BUSY-SLEEP") && !strings.Contains(tail, "SLEPT") {
			tk.saw(tail, false)
			mu.Lock()
			sleeps++
			id := fmt.Sprintf("toolu_sleep_%d", sleeps)
			mu.Unlock()
			// The tool leaves a file named after its kick when it runs.
			cmd := fmt.Sprintf("touch %s; sleep 2; echo SLEPT", kickRE.FindString(tail))
			return []standin.Block{standin.ToolUse(id, "Bash", map[string]any{"command": cmd, "description": "sleep"})}
		}
		if r.decide(tail, q.ToolResult) {
			return []standin.Block{standin.ToolUse(r.check("toolu_check"), "mcp__parley__check_messages", nil)}
		}
		tk.ends <- time.Now()
		return []standin.Block{standin.Text("done")}
	})
	o := tmuxcli.ClaudeOptions{Dir: repo, Home: filepath.Join(e.home, "claude"), Env: []string{"PARLEY_HOME=" + e.home}}
	switch mode {
	case "bypass-accept":
		o.PermissionMode, o.UserSettings = "bypassPermissions", map[string]any{"crossSessionInbound": "accept"}
	case "bypass-held":
		o.PermissionMode = "bypassPermissions"
	}
	tm := tmuxcli.NewServer(b)
	cc := tm.StartClaude("agent", s, o)
	waitForB(b, 60*time.Second, "the door", func() bool { return e.benchDoor(b, repo, "agent").Address != "" })
	rg := &attentionRig{b: b, e: e, repo: repo, tk: tk, screen: cc.Screen,
		sender: e.SessionIn(repo, nil, "--agent", "boss"),
		idle: func() bool {
			return cc.Session().Status == "idle" && e.benchStatus(b, repo, "agent") != "work"
		},
		floor: func(text string) error {
			_, err := (&door.Claude{Socket: cc.Session().Socket}).Write(context.Background(), door.ClaudeLetter{Text: text})
			return err
		}}
	b.ResetTimer()
	if mode == "bypass-held" {
		// Every letter waits for a person here: there is no race to run.
		held, heldFloor, approved, approvedFloor := rg.heldLatency(n, cc)
		b.StopTimer()
		reportHeld(b, held, heldFloor, approved, approvedFloor)
		return
	}
	var parley, floor []time.Duration
	if mode == "busy" {
		parley, floor = rg.busyLatency(n, cc.Type)
	} else {
		parley, floor = rg.latency(n)
	}
	ids := map[string]string{}
	lost, slow, dup, p50, p99 := rg.race(raceN, 10*time.Second, ids)
	b.StopTimer()
	false_ := rg.falselySeen(ids, "agent")
	b.ReportMetric(float64(false_), "race-falsely-seen")
	reportAttention(b, "Claude Code 2.1.332, "+mode, parley, floor, lost, slow, dup, raceN, p50, p99)
	b.Logf("falsely seen in the race: %d of %d", false_, len(ids))
}

// kickRE finds the token of the turn that a busy sample starts.
var kickRE = regexp.MustCompile(`PING-K[0-9]+`)

// busyLatency measures n samples of send_message -> the request carrying
// the letter while the model's tool runs, and n of the bare door the same
// way, alternating: each sample starts a turn whose Bash tool sleeps 2 s,
// and sends once the tool runs (its file is there).

func (rg *attentionRig) busyLatency(n int, typeIn func(string)) (parley, floor []time.Duration) {
	for i := 0; i < 2*n; i++ {
		rg.waitIdle()
		kick := fmt.Sprintf("PING-K%d", i)
		typeIn("BUSY-SLEEP " + kick)
		waitForB(rg.b, 60*time.Second, "the tool of "+kick+" running", func() bool {
			_, err := os.Stat(filepath.Join(rg.repo, kick))
			return err == nil
		})
		if i%2 == 0 {
			tok := fmt.Sprintf("PING-P%d", i)
			start := time.Now()
			rg.sendID(tok + " while busy")
			parley = append(parley, rg.tk.waitFirst(rg.b, tok, 60*time.Second, rg.screen).Sub(start))
		} else {
			tok := fmt.Sprintf("PING-F%d", i)
			start := time.Now()
			if err := rg.floor(tok + " bare letter while busy"); err != nil {
				rg.b.Fatal(err)
			}
			floor = append(floor, rg.tk.waitFirst(rg.b, tok, 60*time.Second, rg.screen).Sub(start))
		}
	}
	return parley, floor
}

// falselySeen counts the copies (of to) of the messages sent, by id, that
// read seen while no model request carried their token.
func (rg *attentionRig) falselySeen(ids map[string]string, to string) int {
	n := 0
	for id, tok := range ids {
		out, _, code := rg.e.runIn(rg.repo, "delivery", id, "--agent", "boss", "--json")
		var st api.MessageStatusResult
		if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
			rg.b.Fatalf("parley delivery %s: exit %d\n%s", id, code, out)
		}
		for _, c := range st.Recipients {
			if c.Recipient != to || c.SeenAt == "" {
				continue
			}
			rg.tk.mu.Lock()
			_, got := rg.tk.first[tok]
			rg.tk.mu.Unlock()
			if !got {
				n++
			}
		}
	}
	return n
}

// heldLatency measures, in a session that holds every letter for its
// person (bypassPermissions without accept), n samples of send_message ->
// the copy reads held (Parley learnt it from the session's receipt, and
// says so in its message.held event), then the approval (the Enter
// on "Deliver") -> the model request carrying the letter; and n of the
// bare door the same way (a letter with a reply socket of this process:
// -> the session's held receipt, then approval -> request), alternating.
func (rg *attentionRig) heldLatency(n int, cc *tmuxcli.Claude) (held, heldFloor, approved, approvedFloor []time.Duration) {
	ctx := context.Background()
	l, err := door.Listen(filepath.Dir(cc.Session().Socket))
	if err != nil {
		rg.b.Fatal(err)
	}
	defer l.Close()
	heldIDs := rg.heldEvents()
	for i := 0; i < n; i++ {
		rg.waitIdle()
		tok := fmt.Sprintf("PING-P%d", i)
		start := time.Now()
		id := rg.sendID(tok + " please look")
		for got := ""; got != id; {
			select {
			case got = <-heldIDs:
			case <-time.After(30*time.Second - time.Since(start)):
				rg.b.Fatalf("the copy of %s never read held:\n%s", tok, rg.screen())
			}
		}
		held = append(held, time.Since(start))
		at := cc.ApproveHeld(30 * time.Second)
		approved = append(approved, rg.tk.waitFirst(rg.b, tok, 60*time.Second, rg.screen).Sub(at))

		rg.waitIdle()
		tok = fmt.Sprintf("PING-F%d", i)
		start = time.Now()
		rc, err := (&door.Claude{Socket: cc.Session().Socket}).Write(ctx, door.ClaudeLetter{Text: tok + " bare letter", Reply: l})
		if err != nil {
			rg.b.Fatal(err)
		}
		timeout := time.After(30 * time.Second)
	receipts:
		for {
			select {
			case r, ok := <-rc.C:
				if !ok {
					rg.b.Fatalf("the reply listener closed before the held receipt for %s", tok)
				}
				if r.Status == door.ReceiptHeld {
					break receipts
				}
			case <-timeout:
				rg.b.Fatalf("the session sent no held receipt for %s:\n%s", tok, rg.screen())
			}
		}
		heldFloor = append(heldFloor, time.Since(start))
		at = cc.ApproveHeld(30 * time.Second)
		approvedFloor = append(approvedFloor, rg.tk.waitFirst(rg.b, tok, 60*time.Second, rg.screen).Sub(at))
		rc.Close()
	}
	return held, heldFloor, approved, approvedFloor
}

// heldEvents follows the daemon's message.held events (`parley watch`):
// the id of each message a session holds for its person, as it comes.
func (rg *attentionRig) heldEvents() <-chan string {
	rg.b.Helper()
	out := rg.e.startWatch(rg.b, "--all", "--kinds", "message.held")
	ids := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var ev api.Event
			if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.ID != "" {
				ids <- ev.ID
			}
		}
	}()
	return ids
}

func reportHeld(b *testing.B, held, heldFloor, approved, approvedFloor []time.Duration) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d.Microseconds())/1000) }
	for _, m := range []struct {
		ds   []time.Duration
		name string
	}{{held, "send-held"}, {heldFloor, "floor-held"}, {approved, "approve-turn"}, {approvedFloor, "floor-approve-turn"}} {
		b.ReportMetric(float64(pctl(m.ds, 0.5).Microseconds())/1000, m.name+"-p50-ms")
		b.ReportMetric(float64(pctl(m.ds, 0.99).Microseconds())/1000, m.name+"-p99-ms")
	}
	b.Logf("\n| client | send_message -> copy held p50 | p99 | floor (bare socket write -> held receipt) p50 | p99 | approve -> turn p50 | p99 | floor (bare letter approved -> turn) p50 | p99 | samples |\n|---|---|---|---|---|---|---|---|---|---|\n| Claude Code 2.1.332, bypass-held | %s | %s | %s | %s | %s | %s | %s | %s | %d + %d |",
		ms(pctl(held, 0.5)), ms(pctl(held, 0.99)), ms(pctl(heldFloor, 0.5)), ms(pctl(heldFloor, 0.99)),
		ms(pctl(approved, 0.5)), ms(pctl(approved, 0.99)), ms(pctl(approvedFloor, 0.5)), ms(pctl(approvedFloor, 0.99)), len(held), len(heldFloor))
}

// benchCodexNotLoaded measures, at the door, n letters to a `codex exec`
// thread, which is not loaded on the interactive session's app-server in
// the same CODEX_HOME: without resume, Queue -> ErrNotLoaded (nothing
// queued: what the doorman reports as "queued: thread not loaded"); with
// it (codex_resume on), Queue -> thread/resume -> the model request
// carrying the letter, which the app-server runs headless; beside the
// floor, a thread/queue/add to the loaded interactive thread -> its
// request, alternating. (At the door; TestCodexNotLoaded drives the path
// through Parley.)
func benchCodexNotLoaded(b *testing.B) {
	n := benchEnvInt("PARLEY_ATTENTION_N", 20)
	rg, home := newCodexRig(b)
	codex := standin.CLI(b, "codex")
	ctx := context.Background()
	var refused, resumed, floor []time.Duration
	b.ResetTimer()
	for i := 0; i < n; i++ {
		b.StopTimer()
		ex := exec.CommandContext(ctx, codex, "exec", "--json", "--skip-git-repo-check", fmt.Sprintf("EXEC-TURN %d", i))
		ex.Dir, ex.Env, ex.WaitDelay = rg.repo, rg.e.environ(), 5*time.Second
		out, err := ex.CombinedOutput()
		thread := threadOf(out)
		if err != nil || thread == "" {
			b.Fatalf("codex exec: %v\n%s", err, out)
		}
		b.StartTimer()
		c := &door.Codex{Home: home, Thread: thread}
		start := time.Now()
		if _, err := c.Queue(ctx, fmt.Sprintf("PING-N%d not loaded", i)); !door.IsNotLoaded(err) {
			b.Fatalf("queue to the exec thread: got %v, want ErrNotLoaded", err)
		}
		refused = append(refused, time.Since(start))
		c.Resume = true
		tok := fmt.Sprintf("PING-R%d", i)
		start = time.Now()
		q, err := c.Queue(ctx, tok+" resumed")
		if err != nil || !q.Resumed {
			b.Fatalf("queue with resume: %v %v", q, err)
		}
		resumed = append(resumed, rg.tk.waitFirst(b, tok, 60*time.Second, rg.screen).Sub(start))
		q.Close()
		rg.waitIdle()
		tok = fmt.Sprintf("PING-F%d", i)
		start = time.Now()
		if err := rg.floor(tok + " bare letter"); err != nil {
			b.Fatal(err)
		}
		floor = append(floor, rg.tk.waitFirst(b, tok, 60*time.Second, rg.screen).Sub(start))
	}
	b.StopTimer()
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d.Microseconds())/1000) }
	for _, m := range []struct {
		ds   []time.Duration
		name string
	}{{refused, "not-loaded-refused"}, {resumed, "resume-turn"}, {floor, "floor"}} {
		b.ReportMetric(float64(pctl(m.ds, 0.5).Microseconds())/1000, m.name+"-p50-ms")
		b.ReportMetric(float64(pctl(m.ds, 0.99).Microseconds())/1000, m.name+"-p99-ms")
	}
	b.Logf("\n| client | queue -> not loaded, nothing queued p50 | p99 | queue with resume -> turn p50 | p99 | floor (thread/queue/add to a loaded thread -> turn) p50 | p99 | samples |\n|---|---|---|---|---|---|---|---|\n| Codex 0.171.0, exec thread not loaded | %s | %s | %s | %s | %s | %s | %d + %d |",
		ms(pctl(refused, 0.5)), ms(pctl(refused, 0.99)), ms(pctl(resumed, 0.5)), ms(pctl(resumed, 0.99)),
		ms(pctl(floor, 0.5)), ms(pctl(floor, 0.99)), len(resumed), len(floor))
}
