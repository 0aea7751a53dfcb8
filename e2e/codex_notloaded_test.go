package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/door"
	"github.com/parley-dev/parley/internal/testenv/standin"
	"github.com/parley-dev/parley/internal/testenv/tmuxcli"
)

// TestCodexNotLoaded: a `codex exec` run registers its agent's door (its
// SessionStart hook) on a thread that the interactive session's app-server
// in the same CODEX_HOME has not loaded: the door is dormant, not closed.
// The agent's live door (the interactive session) takes its letter; with
// only the dormant door left, the copy reads "queued: thread not loaded";
// with codex_resume on, the daemon resumes the exec thread on the
// app-server and queues the letter there: a turn carries it (the model
// sees it) and the copy reads seen.
func TestCodexNotLoaded(t *testing.T) {
	e := newEnv(t)
	repo := initRepo(t, e)
	codexHome := e.withCodex(t)
	codex := standin.CLI(t, "codex")
	if out, errs, code := e.runIn(repo, "init", "codex", "--agent", "cx", "--yes"); code != 0 || !strings.Contains(out, "Codex now trusts Parley's SessionStart hook") {
		t.Fatalf("init codex: exit %d, want 0 and the SessionStart hook trusted\n%s%s", code, out, errs)
	}
	var m model
	s := standin.OpenAI(t, func(r *standin.ResponsesRequest) []standin.Item {
		tail := r.Tail()
		m.add(tail)
		switch {
		case strings.Contains(tail, door.LetterMarker):
			return []standin.Item{standin.Message("GOT THE LETTER")}
		case strings.Contains(tail, "EXEC-TURN"):
			return []standin.Item{standin.Message("EXEC DONE")}
		}
		return []standin.Item{standin.Message("HELLO BACK")}
	})
	tm := tmuxcli.NewServer(t)
	cx := tm.StartCodex("cx", s, tmuxcli.CodexOptions{Dir: repo, Home: codexHome, Env: []string{"PARLEY_HOME=" + e.home}})
	cx.Type("FIRST-TURN hello")
	cx.WaitScreen(60*time.Second, "HELLO BACK")
	live := e.waitDoor(t, repo, "cx", "codex", cx.Screen)

	// A `codex exec` run of the same agent: its thread is not the
	// app-server's, and its door is dormant.
	ex := exec.Command(codex, "exec", "--json", "--skip-git-repo-check", "EXEC-TURN run")
	ex.Dir, ex.Env, ex.WaitDelay = repo, e.environ(), 5*time.Second
	out, err := ex.CombinedOutput()
	thread := threadOf(out)
	if err != nil || thread == "" {
		t.Fatalf("codex exec: %v\n%s", err, out)
	}
	doorOf := func(session string) (api.DoorInfo, string) {
		out, _, _ := e.runIn(repo, "doors", "--all", "--closed", "--json")
		var res api.DoorsResult
		json.Unmarshal([]byte(out), &res)
		for _, x := range res.Doors {
			if x.Session == session {
				return x, out
			}
		}
		return api.DoorInfo{}, out
	}
	waitFor(t, 30*time.Second, "the exec thread's door dormant", func() (bool, string) {
		d, out := doorOf(thread)
		return d.Agent == "cx" && d.ClosedAt != "" && d.CloseReason == "thread not loaded", out
	})

	// The live door takes the letter, not the newer dormant one.
	id := e.sendIn(t, repo, "cx", "MAIL-LIVE please look", "--agent", "boss")
	m.wait(t, 60*time.Second, cx.Screen, door.LetterMarker, "MAIL-LIVE please look")
	waitFor(t, 30*time.Second, "the copy seen through the live door", func() (bool, string) {
		c := e.copyStatus(t, repo, "boss", id, "cx")
		return c.State == "seen" && c.WakePath == "door:codex", fmt.Sprintf("%+v", c)
	})
	cx.WaitScreen(30*time.Second, "GOT THE LETTER")

	// Only the dormant door left: the copy says why no letter went.
	if out, errs, code := e.runIn(repo, "doors", "close", live.ID); code != 0 {
		t.Fatalf("doors close: exit %d %s%s", code, out, errs)
	}
	id = e.sendIn(t, repo, "cx", "MAIL-DORMANT wake the exec thread", "--agent", "boss")
	waitFor(t, 30*time.Second, "the copy queued: thread not loaded", func() (bool, string) {
		c := e.copyStatus(t, repo, "boss", id, "cx")
		return c.State == "queued" && c.Door == "notloaded" && strings.HasPrefix(c.Note, "queued: thread not loaded") && strings.Contains(c.Note, thread), fmt.Sprintf("%+v", c)
	})
	if out, _, _ := e.runIn(repo, "delivery", id, "--agent", "boss"); !strings.Contains(out, "cx queued: thread not loaded since") {
		t.Errorf("parley delivery: want the copy queued: thread not loaded\n%s", out)
	}
	if m.find("MAIL-DORMANT") != "" {
		t.Fatal("the model saw the letter for a thread that is not loaded, without codex_resume")
	}

	// codex_resume on: the daemon resumes the thread and queues the letter.
	if err := os.WriteFile(filepath.Join(e.home, "config.toml"), []byte("codex_resume = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.Must("daemon", "stop")
	e.Must("daemon", "start") // again, with codex_resume
	m.wait(t, 60*time.Second, cx.Screen, door.LetterMarker, "MAIL-DORMANT wake the exec thread")
	waitFor(t, 30*time.Second, "the copy seen through the resumed thread", func() (bool, string) {
		c := e.copyStatus(t, repo, "boss", id, "cx")
		return c.State == "seen" && c.WakePath == "door:codex" && c.SeenAt != "", fmt.Sprintf("%+v", c)
	})
}
