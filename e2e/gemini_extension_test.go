package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/testenv/standin"
)

// TestGeminiExtension installs the repository's Gemini CLI extension with the
// real Gemini CLI, in a throwaway home, checks that its parley server
// connects in a trusted project, and runs a headless session through it
// against the Gemini API stand-in: the session learns its own agent's name
// (no name is baked in), receives a message sent to that name with
// check_messages, and answers with send_message. The CLI makes no call
// beyond loopback.
func TestGeminiExtension(t *testing.T) {
	gemini := standin.CLI(t, "gemini")
	e := newEnv(t)
	ext, _ := filepath.Abs("../extensions/gemini")
	home := filepath.Join(e.home, "gemini")
	proj := filepath.Join(e.home, "proj")
	os.MkdirAll(filepath.Join(proj, ".git"), 0o755)
	os.MkdirAll(home, 0o700)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	tool := func(name string) string { return standin.GeminiTool("parley", name) }
	var me string // the session's agent, as whoami tells the model
	sent := make(chan error, 1)
	s := standin.Gemini(t, func(r *standin.GenerateRequest) []standin.Part {
		if !strings.Contains(r.First(), "GEMINI-TASK") {
			return []standin.Part{standin.GeminiText("OK")}
		}
		if out, ok := r.Result("c_send"); ok {
			return []standin.Part{standin.GeminiText("DONE " + out)}
		}
		if out, ok := r.Result("c_check"); ok {
			if !strings.Contains(out, "hello from boss") {
				return []standin.Part{standin.GeminiText("NO MAIL: " + out)}
			}
			return []standin.Part{standin.GeminiCall("c_send", tool("send_message"), map[string]any{"to": "boss", "content": "got it, boss"})}
		}
		if out, ok := r.Result("c_who"); ok {
			// Mail comes for the name the session just learnt.
			var who struct {
				Agent string `json:"agent"`
			}
			if i := strings.Index(out, "{"); i >= 0 {
				json.NewDecoder(strings.NewReader(out[i:])).Decode(&who)
			}
			me = who.Agent
			var err error
			if o, errs, code := e.runIn(proj, "send", me, "hello from boss", "--agent", "boss"); code != 0 {
				err = fmt.Errorf("exit %d: %s%s", code, o, errs)
			}
			select {
			case sent <- err:
			default: // a retried request: the first send counts
			}
			if err != nil {
				return []standin.Part{standin.GeminiText("SEND FAILED")}
			}
			return []standin.Part{standin.GeminiCall("c_check", tool("check_messages"), nil)}
		}
		if !r.Offers(tool("whoami")) {
			return []standin.Part{standin.GeminiText("NO PARLEY TOOLS")}
		}
		return []standin.Part{standin.GeminiCall("c_who", tool("whoami"), nil)}
	})
	trap := standin.NewTrap(t)
	genv := standin.GeminiEnv(t, s, home, trap.URL)
	run := func(stdin string, args ...string) string {
		t.Helper()
		c := exec.CommandContext(ctx, gemini, args...)
		c.Dir = proj
		c.Env = append(genv, "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"), "PARLEY_HOME="+e.home)
		c.Stdin = strings.NewReader(stdin)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("gemini %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := run("", "extensions", "validate", ext); !strings.Contains(out, "successfully validated") {
		t.Fatalf("extensions validate: %s", out)
	}
	// Installing asks to trust the folder: a person answers y.
	if out := run("y\n", "extensions", "install", ext, "--consent"); !strings.Contains(out, `Extension "parley" installed successfully`) {
		t.Fatalf("extensions install: %s", out)
	}
	// Installing is the one step that calls beyond loopback: the CLI's
	// extension manager logs the install to Google's usage statistics even
	// with privacy.usageStatisticsEnabled false (0.61.0). The trap (its
	// proxy) refused it; nothing else may go out.
	for _, h := range trap.Hosts() {
		if h != "CONNECT play.googleapis.com:443" {
			t.Errorf("gemini extensions install called %s", h)
		}
	}
	installed := len(trap.Hosts())
	if out := run("", "mcp", "list"); !strings.Contains(out, "parley (from parley)") || !strings.Contains(out, "Connected") {
		t.Errorf("gemini mcp list: %s; want the extension's parley server connected", out)
	}

	// A headless session: the person allows Parley's tools, as the policy
	// engine's prompt would otherwise ask them to.
	out := run("", "-p", "GEMINI-TASK", "--output-format", "json",
		"--allowed-tools", strings.Join([]string{tool("whoami"), tool("check_messages"), tool("send_message")}, ","))
	select {
	case err := <-sent:
		if err != nil {
			t.Fatalf("parley send to the session's agent %q: %v", me, err)
		}
	default:
		t.Fatalf("the session never learnt its name (whoami):\n%s", out)
	}
	if !strings.HasPrefix(me, "session-proj-") {
		t.Errorf("the session's agent is %q; want a name of its own, session-proj-…", me)
	}
	if !strings.Contains(out, "DONE") {
		t.Errorf("the session did not finish its send:\n%s", out)
	}
	var inbox struct {
		Messages []struct{ From, Content string } `json:"messages"`
	}
	ib, errs, code := e.runIn(proj, "inbox", "--agent", "boss", "--json")
	if code != 0 || json.Unmarshal([]byte(ib), &inbox) != nil || len(inbox.Messages) != 1 ||
		inbox.Messages[0].From != me || inbox.Messages[0].Content != "got it, boss" {
		t.Errorf("boss's inbox: %s %s; want %s's answer", ib, errs, me)
	}
	if h := trap.Hosts()[installed:]; len(h) > 0 {
		t.Errorf("the Gemini CLI called beyond loopback: %v", h)
	}
}
