package e2e

// The attention benchmark (scripts/bench attention; not run in CI): real
// interactive Claude Code and Codex sessions in tmux, set up by `parley
// init`, the model replaced by a stand-in. Latency: from send_message to
// the stand-in receiving the turn that carries the letter, beside the floor
// of the bare door (a letter written straight into the Claude Code socket,
// a thread/queue/add as `codex queue` does) to the same, in the same run,
// one sample of each in turn. The race: sends timed around the ends of the
// agent's turns (the busy-to-idle window), counting messages the agent
// never read (lost), read late, or read twice.
//
//	go test ./e2e -run '^$' -bench BenchmarkAttention -benchtime 1x -timeout 60m
//	PARLEY_ATTENTION_N=50 PARLEY_ATTENTION_RACE=200 (the defaults)

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/door"
	"github.com/parley-dev/parley/internal/testenv/standin"
	"github.com/parley-dev/parley/internal/testenv/tmuxcli"
)

func benchEnvInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// tokens records when the stand-in first saw each token (PING-..., RACE-...)
// and how many check_messages results carried each.
type tokens struct {
	mu    sync.Mutex
	first map[string]time.Time
	reads map[string]int
	read  map[string]time.Time
	ends  chan time.Time // the stand-in answered a turn's last request
	// changed is closed, and replaced, each time the stand-in saw a
	// request: what await waits on.
	changed chan struct{}
}

var tokenRE = regexp.MustCompile(`(PING|RACE)-[A-Z]?[0-9]+`)

func newTokens() *tokens {
	return &tokens{first: map[string]time.Time{}, reads: map[string]int{}, read: map[string]time.Time{}, ends: make(chan time.Time, 1000), changed: make(chan struct{})}
}

// saw notes the tokens of a request's tail; inResult says the tail is a
// check_messages result (the agent read them).
func (tk *tokens) saw(tail string, inResult bool) {
	now := time.Now()
	tk.mu.Lock()
	defer tk.mu.Unlock()
	close(tk.changed)
	tk.changed = make(chan struct{})
	for _, t := range tokenRE.FindAllString(tail, -1) {
		if _, ok := tk.first[t]; !ok {
			tk.first[t] = now
		}
	}
	if inResult {
		seen := map[string]bool{}
		for _, t := range tokenRE.FindAllString(tail, -1) {
			if !seen[t] {
				seen[t] = true
				tk.reads[t]++
				if _, ok := tk.read[t]; !ok {
					tk.read[t] = now
				}
			}
		}
	}
}

// await waits until cond, called with tk.mu held, is true after a request
// of the stand-in (or at once), and reports whether it was within within.
func (tk *tokens) await(within time.Duration, cond func() bool) bool {
	timeout := time.NewTimer(within)
	defer timeout.Stop()
	for {
		tk.mu.Lock()
		ok, changed := cond(), tk.changed
		tk.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-changed:
		case <-timeout.C:
			return false
		}
	}
}

// waitFirst returns when the stand-in first saw tok.
func (tk *tokens) waitFirst(b *testing.B, tok string, within time.Duration, screen func() string) time.Time {
	b.Helper()
	var t time.Time
	if !tk.await(within, func() bool { var ok bool; t, ok = tk.first[tok]; return ok }) {
		b.Fatalf("the model never got %s:\n%s", tok, screen())
	}
	return t
}

// replies is the stand-in's script, the same for both clients: a letter (or
// a Stop hook that says mail is unread) makes it call check_messages; a
// check's result ends the turn, unless a letter came beside it; a bare
// letter (the floor) ends it at once. It counts what each check's result
// handed the agent (read), once per result.
type replies struct {
	tk      *tokens
	mu      sync.Mutex
	n       int
	pending []string // check calls whose result was not counted yet
}

// check is a new check_messages call id.
func (r *replies) check(prefix string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	id := fmt.Sprintf("%s_%d", prefix, r.n)
	r.pending = append(r.pending, id)
	return id
}

func (r *replies) id(prefix string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	return fmt.Sprintf("%s_%d", prefix, r.n)
}

// decide records the request (its tail, and the results of the checks it
// carries, through result) and says whether the model calls
// check_messages now.
func (r *replies) decide(tail string, result func(id string) (string, bool)) bool {
	r.tk.saw(tail, false)
	r.mu.Lock()
	var left []string
	for _, id := range r.pending {
		if out, ok := result(id); ok {
			r.tk.saw(out, true)
		} else {
			left = append(left, id)
		}
	}
	r.pending = left
	r.mu.Unlock()
	return strings.Contains(tail, door.LetterMarker) || strings.Contains(tail, "unread message")
}

type attentionRig struct {
	b      *testing.B
	e      *env
	repo   string
	tk     *tokens
	sender *mcp.ClientSession
	screen func() string
	idle   func() bool // the session is idle, its agent's status ready
	floor  func(text string) error
}

func (rg *attentionRig) waitIdle() {
	rg.b.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !rg.idle() {
		if time.Now().After(deadline) {
			rg.b.Fatalf("the session never went idle:\n%s", rg.screen())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sendID sends content to the agent and returns the message's id.
func (rg *attentionRig) sendID(content string) string {
	rg.b.Helper()
	res, err := rg.sender.CallTool(context.Background(), &mcp.CallToolParams{Name: "send_message",
		Arguments: map[string]any{"to": "agent", "content": content}})
	if err != nil || res.IsError {
		rg.b.Fatalf("send_message: %v %v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out api.SendResult
	json.Unmarshal(b, &out)
	return out.MessageID
}

// latency measures n samples of send_message -> turn and n of the floor,
// alternating.
func (rg *attentionRig) latency(n int) (parley, floor []time.Duration) {
	for i := 0; i < n; i++ {
		rg.waitIdle()
		tok := fmt.Sprintf("PING-P%d", i)
		start := time.Now()
		rg.sendID(tok + " please look")
		parley = append(parley, rg.tk.waitFirst(rg.b, tok, 60*time.Second, rg.screen).Sub(start))
		rg.waitIdle()
		tok = fmt.Sprintf("PING-F%d", i)
		start = time.Now()
		if err := rg.floor(tok + " bare letter"); err != nil {
			rg.b.Fatal(err)
		}
		floor = append(floor, rg.tk.waitFirst(rg.b, tok, 60*time.Second, rg.screen).Sub(start))
	}
	return parley, floor
}

// race sends n messages timed around the ends of the agent's turns: after
// each turn's last answer, one to three sends after 0 to 300 ms (drawn
// from a seeded source: the randomisation is the benchmark's, that the
// sends fall all over the busy-to-idle window). It returns how many were
// never read, read later than late after their send, and read more than
// once; ids, if not nil, gets each message's id (id -> token).
func (rg *attentionRig) race(n int, late time.Duration, ids map[string]string) (lost, slow, dup int, p50, p99 time.Duration) {
	sent := map[string]time.Time{}
	rnd := rand.New(rand.NewPCG(1, 2))
	// Drain the ends of the latency run's turns.
	for len(rg.tk.ends) > 0 {
		<-rg.tk.ends
	}
	i := 0
	kick := func() {
		tok := fmt.Sprintf("RACE-%d", i)
		i++
		sent[tok] = time.Now()
		id := rg.sendID(tok + " in the race")
		if ids != nil {
			ids[id] = tok
		}
	}
	rg.waitIdle()
	kick()
	for i < n {
		select {
		case <-rg.tk.ends:
		case <-time.After(30 * time.Second):
			// No turn ran (everything was read): start one.
		}
		// The benchmark's randomisation, not a wait for anything.
		time.Sleep(time.Duration(rnd.IntN(300)) * time.Millisecond)
		for k := 1 + rnd.IntN(3); k > 0 && i < n; k-- {
			kick()
		}
	}
	// Every message had its chance: the agent reads until its inbox is
	// empty, or a minute passes.
	rg.tk.await(60*time.Second, func() bool {
		for tok := range sent {
			if _, ok := rg.tk.read[tok]; !ok {
				return false
			}
		}
		return true
	})
	rg.tk.mu.Lock()
	defer rg.tk.mu.Unlock()
	var lat []time.Duration
	for tok, at := range sent {
		r, ok := rg.tk.read[tok]
		switch {
		case !ok:
			lost++
			continue
		case r.Sub(at) > late:
			slow++
		}
		lat = append(lat, r.Sub(at))
		if rg.tk.reads[tok] > 1 {
			dup++
		}
	}
	if len(lat) > 0 {
		p50, p99 = pctl(lat, 0.5), pctl(lat, 0.99)
	}
	return lost, slow, dup, p50, p99
}

func pctl(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func reportAttention(b *testing.B, client string, parley, floor []time.Duration, lost, slow, dup, n int, rp50, rp99 time.Duration) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d.Microseconds())/1000) }
	b.ReportMetric(float64(pctl(parley, 0.5).Microseconds())/1000, "send-turn-p50-ms")
	b.ReportMetric(float64(pctl(parley, 0.99).Microseconds())/1000, "send-turn-p99-ms")
	b.ReportMetric(float64(pctl(floor, 0.5).Microseconds())/1000, "floor-p50-ms")
	b.ReportMetric(float64(pctl(floor, 0.99).Microseconds())/1000, "floor-p99-ms")
	b.ReportMetric(float64(lost), "race-lost")
	b.ReportMetric(float64(slow), "race-late")
	b.ReportMetric(float64(dup), "race-dup")
	floorName := "bare socket write"
	if strings.HasPrefix(client, "Codex") {
		floorName = "bare thread/queue/add"
	}
	b.Logf("\n| client | send_message -> turn p50 | p99 | floor (%s -> turn) p50 | p99 | samples | race sends | lost | late (> 10 s) | duplicated | race send -> read p50 | p99 |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n| %s | %s | %s | %s | %s | %d + %d | %d | %d | %d | %d | %s | %s |",
		floorName, client, ms(pctl(parley, 0.5)), ms(pctl(parley, 0.99)), ms(pctl(floor, 0.5)), ms(pctl(floor, 0.99)),
		len(parley), len(floor), n, lost, slow, dup, ms(rp50), ms(rp99))
}

// benchClaudeRepo is a repository that `parley init claude --agent agent`
// set up, with the session's local settings.
func benchClaudeRepo(b *testing.B, e *env, settings string) string {
	repo := filepath.Join(e.home, "repo")
	os.MkdirAll(filepath.Join(repo, ".git"), 0o755)
	if out, errs, code := e.runIn(repo, "init", "claude", "--agent", "agent", "--yes"); code != 0 {
		b.Fatalf("init claude: exit %d\n%s%s", code, out, errs)
	}
	if err := os.WriteFile(filepath.Join(repo, ".claude", "settings.local.json"), []byte(settings), 0o644); err != nil {
		b.Fatal(err)
	}
	return repo
}

// BenchmarkAttentionClaude: an interactive Claude Code session set up by
// `parley init claude`.
func BenchmarkAttentionClaude(b *testing.B) {
	n, raceN := benchEnvInt("PARLEY_ATTENTION_N", 50), benchEnvInt("PARLEY_ATTENTION_RACE", 200)
	e := newEnv(b)
	repo := benchClaudeRepo(b, e, `{"enabledMcpjsonServers":["parley"]}`)
	tk := newTokens()
	r := &replies{tk: tk}
	s := standin.Anthropic(b, func(q *standin.MessagesRequest) []standin.Block {
		if r.decide(q.Tail(), q.ToolResult) {
			return []standin.Block{standin.ToolUse(r.check("toolu_check"), "mcp__parley__check_messages", nil)}
		}
		tk.ends <- time.Now()
		return []standin.Block{standin.Text("done")}
	})
	tm := tmuxcli.NewServer(b)
	cc := tm.StartClaude("agent", s, tmuxcli.ClaudeOptions{Dir: repo, Home: filepath.Join(e.home, "claude"), Env: []string{"PARLEY_HOME=" + e.home}})
	var d doorInfo
	waitForB(b, 60*time.Second, "the door", func() bool { d = e.benchDoor(b, repo, "agent"); return d.Address != "" })
	sess := cc.Session()
	rg := &attentionRig{b: b, e: e, repo: repo, tk: tk, screen: cc.Screen,
		sender: e.SessionIn(repo, nil, "--agent", "boss"),
		idle: func() bool {
			return cc.Session().Status == "idle" && e.benchStatus(b, repo, "agent") != "work"
		},
		floor: func(text string) error {
			_, err := (&door.Claude{Socket: sess.Socket}).Write(context.Background(), door.ClaudeLetter{Text: text})
			return err
		}}
	b.ResetTimer()
	parley, floor := rg.latency(n)
	lost, slow, dup, p50, p99 := rg.race(raceN, 10*time.Second, nil)
	b.StopTimer()
	reportAttention(b, "Claude Code 2.1.332", parley, floor, lost, slow, dup, raceN, p50, p99)
}

// BenchmarkAttentionCodex: an interactive Codex session set up by `parley
// init codex`.
func BenchmarkAttentionCodex(b *testing.B) {
	n, raceN := benchEnvInt("PARLEY_ATTENTION_N", 50), benchEnvInt("PARLEY_ATTENTION_RACE", 200)
	rg, _ := newCodexRig(b)
	b.ResetTimer()
	parley, floor := rg.latency(n)
	lost, slow, dup, p50, p99 := rg.race(raceN, 10*time.Second, nil)
	b.StopTimer()
	reportAttention(b, "Codex 0.171.0", parley, floor, lost, slow, dup, raceN, p50, p99)
}

// newCodexRig starts an interactive Codex set up by `parley init codex
// --agent agent` in a CODEX_HOME of its own, and returns the rig (its
// floor a bare thread/queue/add to the session's thread) and CODEX_HOME.
func newCodexRig(b *testing.B) (*attentionRig, string) {
	e := newEnv(b)
	repo := filepath.Join(e.home, "repo")
	os.MkdirAll(filepath.Join(repo, ".git"), 0o755)
	codexHome := e.withCodex(b)
	if out, errs, code := e.runIn(repo, "init", "codex", "--agent", "agent", "--yes"); code != 0 || !strings.Contains(out, "Codex now trusts Parley's SessionStart hook") {
		b.Fatalf("init codex: exit %d, want 0 and the SessionStart hook trusted\n%s%s", code, out, errs)
	}
	tk := newTokens()
	r := &replies{tk: tk}
	s := standin.OpenAI(b, func(q *standin.ResponsesRequest) []standin.Item {
		tail := q.Tail()
		if strings.Contains(tail, "FIRST-TURN") && !strings.Contains(tail, `"agent"`) {
			return []standin.Item{standin.FunctionCall(r.id("call_whoami"), "mcp__parley", "whoami", map[string]any{})}
		}
		if r.decide(tail, q.Output) {
			return []standin.Item{standin.FunctionCall(r.check("call_check"), "mcp__parley", "check_messages", map[string]any{})}
		}
		tk.ends <- time.Now()
		return []standin.Item{standin.Message("done")}
	})
	tm := tmuxcli.NewServer(b)
	cx := tm.StartCodex("agent", s, tmuxcli.CodexOptions{Dir: repo, Home: codexHome, Env: []string{"PARLEY_HOME=" + e.home}})
	cx.Type("FIRST-TURN hello")
	var d doorInfo
	waitForB(b, 60*time.Second, "the door", func() bool { d = e.benchDoor(b, repo, "agent"); return d.Address != "" })
	c := &door.Codex{Home: codexHome, Thread: d.Session}
	return &attentionRig{b: b, e: e, repo: repo, tk: tk, screen: cx.Screen,
		sender: e.SessionIn(repo, nil, "--agent", "boss"),
		idle: func() bool {
			st, err := c.Status(context.Background())
			return err == nil && st == "idle"
		},
		floor: func(text string) error {
			q, err := c.Queue(context.Background(), text)
			if err == nil {
				q.Close()
			}
			return err
		}}, codexHome
}

type doorInfo struct{ Address, Session string }

func (e *env) benchDoor(b *testing.B, dir, agent string) doorInfo {
	out, _, code := e.runIn(dir, "doors", "--agent", agent, "--json")
	if code != 0 {
		return doorInfo{}
	}
	var res struct {
		Doors []struct{ Address, Session string } `json:"doors"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Doors) == 0 {
		return doorInfo{}
	}
	return doorInfo{res.Doors[0].Address, res.Doors[0].Session}
}

func (e *env) benchStatus(b *testing.B, dir, agent string) string {
	out, _, _ := e.runIn(dir, "agents", "--json")
	var res struct {
		Agents []struct{ Name, Status string } `json:"agents"`
	}
	json.Unmarshal([]byte(out), &res)
	for _, a := range res.Agents {
		if a.Name == agent {
			return a.Status
		}
	}
	return ""
}

func waitForB(b *testing.B, within time.Duration, what string, cond func() bool) {
	b.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
