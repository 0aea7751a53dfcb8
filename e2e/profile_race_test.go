package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The races of issue 11 for the other profiles' reads: sidechat's
// receive_message (with no timeout it blocks until a message comes) and
// agentmail's receive (it does not block). Both read through ops.Receive. A
// reader killed with kill -9, or one that hangs up its HTTP request unread,
// around a send must not take the message with it. Neither profile's answer
// says whether it is a repeat (their formats are fixed), so these tests count
// repeats and check that nothing is lost.

// profileRead is how one profile reads and sends.
type profileRead struct {
	profile string
	reader  []string       // identity flags of the reader (mcp serve)
	recv    string         // the receiving tool
	recvIn  map[string]any // its arguments in a round
	drainIn map[string]any // its arguments when draining: it must not block long
	send    string         // the sending tool
	sendIn  func(i int) map[string]any
	idOf    func(structured json.RawMessage) string // "" when nothing came
	// waitWS and waitAgent name the reader for the daemon's waiter count,
	// when its read blocks.
	waitWS, waitAgent string
}

const raceSession = "race"

var sidechatRead = profileRead{
	profile: "sidechat",
	reader:  []string{"--workspace", "sc"},
	recv:    "receive_message",
	recvIn:  map[string]any{"session": raceSession, "as": "scribe"}, // no timeout: forever
	drainIn: map[string]any{"session": raceSession, "as": "scribe", "timeout": 500},
	send:    "send_message",
	sendIn: func(i int) map[string]any {
		return map[string]any{"session": raceSession, "to": "scribe", "message": map[string]any{"round": i}}
	},
	idOf: func(b json.RawMessage) string {
		var r struct {
			MessageID string `json:"message_id"`
		}
		json.Unmarshal(b, &r)
		return r.MessageID
	},
	waitWS: "sc#sidechat:" + raceSession, waitAgent: "scribe",
}

var agentmailRead = profileRead{
	profile: "agentmail",
	reader:  []string{"--workspace", "am", "--agent", "bob"},
	recv:    "receive",
	send:    "send",
	sendIn: func(i int) map[string]any {
		return map[string]any{"recipient": "bob", "message": fmt.Sprintf("round %d", i)}
	},
	idOf: func(b json.RawMessage) string {
		var r struct {
			ID string `json:"id"`
		}
		json.Unmarshal(b, &r)
		return r.ID
	},
}

// profileRace is one race test of a profile's read.
type profileRace struct {
	t      *testing.T
	e      *env
	p      profileRead
	ws     string
	sender *mcp.ClientSession
	seen   map[string]int // message id -> times received
	sent   []string
}

func newProfileRace(t *testing.T, p profileRead) *profileRace {
	e := newEnv(t)
	ws := p.reader[1]
	e.Must("join", "--name", "bob", "--role", "dev", "--workspace", ws)
	if p.waitAgent != "" {
		// Known to the daemon, so that its waiter count shows.
		e.Must("join", "--name", p.waitAgent, "--role", "dev", "--workspace", p.waitWS)
	}
	sender := e.Session(nil, "--profile", p.profile, "--workspace", ws, "--agent", "alice")
	return &profileRace{t: t, e: e, p: p, ws: ws, sender: sender, seen: map[string]int{}}
}

func (r *profileRace) got(structured json.RawMessage) {
	if id := r.p.idOf(structured); id != "" {
		r.seen[id]++
	}
}

// round runs read (the reader's call; it returns the structured answer it
// received, if any) and, once it is blocked when the profile's read blocks,
// disturbs it within ±span of a send.
func (r *profileRace) round(i int, span time.Duration, read func() json.RawMessage, disturb func()) {
	r.t.Helper()
	done := make(chan json.RawMessage, 1)
	go func() { done <- read() }()
	if r.p.waitAgent != "" {
		waitUntil(r.t, fmt.Sprintf("round %d: the reader blocked", i), func() bool {
			return len(done) > 0 || r.e.waiting(r.p.waitWS, r.p.waitAgent) > 0
		})
	}
	around(offset(span), disturb, func() {
		var out struct {
			MessageID string `json:"message_id"`
		}
		mustCall(r.t, r.sender, r.p.send, r.p.sendIn(i), &out)
		r.sent = append(r.sent, out.MessageID)
	})
	r.got(<-done)
	if r.p.waitAgent != "" {
		waitUntil(r.t, fmt.Sprintf("round %d: the reader's call to end", i), func() bool { return r.e.waiting(r.p.waitWS, r.p.waitAgent) == 0 })
	}
}

// finish reads what is left through a fresh session until every message
// sent came (what a gone reader held comes back as the daemon notices) or
// 20 s pass, and checks that none was lost.
func (r *profileRace) finish(what string, rounds int) {
	r.t.Helper()
	s := r.e.Session(nil, append([]string{"--profile", r.p.profile}, r.p.reader...)...)
	defer s.Close()
	missing := func() int {
		n := 0
		for _, id := range r.sent {
			if r.seen[id] == 0 {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(20 * time.Second); missing() > 0 && time.Now().Before(deadline); {
		res := call(r.t, s, r.p.recv, r.p.drainIn, nil)
		b, _ := json.Marshal(res.StructuredContent)
		if r.p.idOf(b) == "" && r.p.drainIn == nil {
			time.Sleep(20 * time.Millisecond) // agentmail's receive does not block: poll
		}
		r.got(b)
	}
	repeats := 0
	for _, n := range r.seen {
		repeats += max(n-1, 0)
	}
	lost := missing()
	if lost > 0 {
		r.t.Errorf("%d of %d messages read but never received", lost, len(r.sent))
		for _, id := range r.sent {
			if r.seen[id] == 0 {
				var st any
				r.e.mustAPI("GET", "/messages/"+id+"/status", r.p.waitWS, "", nil, &st)
				r.t.Logf("first missing, %s: %v", id, st)
				break
			}
		}
	}
	r.t.Logf("%s: %d rounds, %d sent, %d lost, %d received again", what, rounds, len(r.sent), lost, repeats)
}

// killRace kills `parley mcp serve` of the profile with SIGKILL within 20 ms
// of a send while it reads.
func killRace(t *testing.T, p profileRead) {
	rounds := raceRounds(t, 20)
	r := newProfileRace(t, p)
	for i := range rounds {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.Command(bin, append([]string{"mcp", "serve", "--profile", p.profile}, p.reader...)...)
		cmd.Env = r.e.environ()
		client := mcp.NewClient(&mcp.Implementation{Name: "race", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		r.round(i, 20*time.Millisecond, func() json.RawMessage {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: p.recv, Arguments: p.recvIn})
			if err != nil || res.IsError {
				return nil // killed first
			}
			b, _ := json.Marshal(res.StructuredContent)
			return b
		}, func() { cmd.Process.Kill() })
		cs.Close()
		cancel()
	}
	r.finish("kill -9 of parley mcp serve --profile "+p.profile+" reading, within ±20 ms of a send", rounds)
}

// hangUpRace kills a plain HTTP client of the profile as it reads (its
// read's connection and its GET stream close, unread and without
// notifications/cancelled) within 3 ms of a send; the next client reads
// on.
func hangUpRace(t *testing.T, p profileRead) {
	rounds := raceRounds(t, 30)
	r := newProfileRace(t, p)
	agent := ""
	if len(p.reader) > 2 {
		agent = p.reader[3]
	}
	for i := range rounds {
		s := r.e.dropSession(t, r.ws, agent, p.profile)
		s.openStream()
		read, hangUp := hangUpRound[json.RawMessage](t, i, func() (net.Conn, error) {
			return s.send(p.recv, p.recvIn)
		})
		r.round(i, 3*time.Millisecond, read, func() { hangUp(); s.die() })
	}
	r.finish("a plain HTTP client of "+p.profile+" killed in "+p.recv+", unread, within ±3 ms of a send", rounds)
}

func TestRaceKillSidechatReceive(t *testing.T) { killRace(t, sidechatRead) }

func TestRaceKillAgentmailReceive(t *testing.T) { killRace(t, agentmailRead) }

func TestRaceHangUpSidechatReceive(t *testing.T) { hangUpRace(t, sidechatRead) }

func TestRaceHangUpAgentmailReceive(t *testing.T) { hangUpRace(t, agentmailRead) }
