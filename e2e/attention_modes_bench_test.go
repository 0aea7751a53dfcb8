package e2e

// The attention benchmark per receiver mode (scripts/bench is not changed;
// run it with go test): the real Claude Code from test/npm in tmux, set up
// by `parley init claude`, the model replaced by the stand-in, in each of
//
//	default       --permission-mode default
//	bypass-accept bypassPermissions, the user's settings say
//	              "crossSessionInbound": "accept" (what doctor advises)
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
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
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

func BenchmarkAttentionModes(b *testing.B) {
	for _, mode := range []string{"default", "bypass-accept", "busy"} {
		b.Run(mode, func(b *testing.B) { benchClaudeMode(b, mode) })
	}
}

func benchClaudeMode(b *testing.B, mode string) {
	n, raceN := benchEnvInt("PARLEY_ATTENTION_N", 20), benchEnvInt("PARLEY_ATTENTION_RACE", 100)
	e := newEnv(b)
	repo := filepath.Join(e.home, "repo")
	os.MkdirAll(filepath.Join(repo, ".git"), 0o755)
	if out, errs, code := e.runIn(repo, "init", "claude", "--agent", "agent", "--yes"); code != 0 {
		b.Fatalf("init claude: exit %d\n%s%s", code, out, errs)
	}
	os.WriteFile(filepath.Join(repo, ".claude", "settings.local.json"), []byte(`{"enabledMcpjsonServers":["parley"],"permissions":{"allow":["Bash"]}}`), 0o644)
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
			return []standin.Block{standin.ToolUse(id, "Bash", map[string]any{"command": "sleep 2; echo SLEPT", "description": "sleep"})}
		}
		if r.decide(tail, q.ToolResult) {
			return []standin.Block{standin.ToolUse(r.check("toolu_check"), "mcp__parley__check_messages", nil)}
		}
		tk.ends <- time.Now()
		return []standin.Block{standin.Text("done")}
	})
	o := tmuxcli.ClaudeOptions{Dir: repo, Home: filepath.Join(e.home, "claude"), Env: []string{"PARLEY_HOME=" + e.home}}
	if mode == "bypass-accept" {
		o.PermissionMode, o.UserSettings = "bypassPermissions", map[string]any{"crossSessionInbound": "accept"}
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
	var parley, floor []time.Duration
	if mode == "busy" {
		parley, floor = rg.busyLatency(n, cc.Type)
	} else {
		parley, floor = rg.latency(n)
	}
	ids := map[string]string{}
	lost, slow, dup, p50, p99 := rg.raceIDs(raceN, 10*time.Second, ids)
	b.StopTimer()
	false_ := rg.falselySeen(ids, "agent")
	b.ReportMetric(float64(false_), "race-falsely-seen")
	reportAttention(b, "Claude Code 2.1.332, "+mode, parley, floor, lost, slow, dup, raceN, p50, p99)
	b.Logf("falsely seen in the race: %d of %d", false_, len(ids))
}

// busyLatency measures n samples of send_message -> the request carrying
// the letter while the model's tool runs, and n of the bare door the same
// way, alternating: each sample starts a turn whose Bash tool sleeps 2 s,
// and sends once the stand-in was asked for that tool.
func (rg *attentionRig) busyLatency(n int, typeIn func(string)) (parley, floor []time.Duration) {
	for i := 0; i < 2*n; i++ {
		rg.waitIdle()
		kick := fmt.Sprintf("PING-K%d", i)
		typeIn("BUSY-SLEEP " + kick)
		rg.tk.waitFirst(rg.b, kick, 60*time.Second, rg.screen)
		time.Sleep(200 * time.Millisecond) // the tool runs
		if i%2 == 0 {
			tok := fmt.Sprintf("PING-P%d", i)
			start := time.Now()
			rg.send(tok + " while busy")
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

// raceIDs is attentionRig.race, keeping each message's id (ids: id ->
// token) for the falsely-seen count.
func (rg *attentionRig) raceIDs(n int, late time.Duration, ids map[string]string) (lost, slow, dup int, p50, p99 time.Duration) {
	sent := map[string]time.Time{}
	rnd := rand.New(rand.NewPCG(1, 2))
	for len(rg.tk.ends) > 0 {
		<-rg.tk.ends
	}
	i := 0
	kick := func() {
		tok := fmt.Sprintf("RACE-%d", i)
		i++
		sent[tok] = time.Now()
		ids[rg.sendID(tok+" in the race")] = tok
	}
	rg.waitIdle()
	kick()
	for i < n {
		select {
		case <-rg.tk.ends:
		case <-time.After(30 * time.Second):
		}
		time.Sleep(time.Duration(rnd.IntN(300)) * time.Millisecond)
		for k := 1 + rnd.IntN(3); k > 0 && i < n; k-- {
			kick()
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		rg.tk.mu.Lock()
		missing := 0
		for tok := range sent {
			if _, ok := rg.tk.read[tok]; !ok {
				missing++
			}
		}
		rg.tk.mu.Unlock()
		if missing == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
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
