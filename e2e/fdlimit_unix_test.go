//go:build unix

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A daemon out of file descriptors says so at once: a CLI send fails fast
// with its reason and the documented exit status (7, unavailable), and
// once the connections that held them close, sends work and nothing was
// lost. Before, net/http's accept loop slept and retried on EMFILE, and a
// send waited silently in the backlog (36 s measured).
func TestOutOfFilesSaidAtOnce(t *testing.T) {
	e := newEnv(t)
	// A limit of 64 is hard too: Go raises the soft limit to the hard one
	// at start.
	start := exec.Command("sh", "-c", `ulimit -n 64 && exec "$0" daemon start`, bin)
	start.Env, start.Dir = e.environ(), e.home
	if out, err := start.CombinedOutput(); err != nil {
		t.Fatalf("daemon start under ulimit -n 64: %v\n%s", err, out)
	}
	e.Must("join", "--workspace", "w", "--name", "a")
	var before sendResult
	e.MustJSON(&before, "send", "--workspace", "w", "--agent", "a", "b", "before")

	// Hold kept-alive connections until the daemon answers one with its
	// out-of-files reply.
	sock := filepath.Join(e.home, "parley.sock")
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	refused := ""
	for i := 0; i < 128 && refused == ""; i++ {
		c, err := net.DialTimeout("unix", sock, 5*time.Second)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		held = append(held, c)
		c.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprint(c, "GET /api/v1/health HTTP/1.1\r\nHost: parley\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		var b strings.Builder
		bufio.NewReader(resp.Body).WriteTo(&b)
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			refused = b.String()
		}
	}
	if !strings.Contains(refused, `"kind":"unavailable"`) || !strings.Contains(refused, "out of file descriptors") || !strings.Contains(refused, "ulimit -n") {
		t.Fatalf("with its descriptors held: got %q, want a JSON error body saying the daemon is out of file descriptors", refused)
	}

	t0 := time.Now()
	_, errs, code := e.Run("send", "--workspace", "w", "--agent", "a", "b", "during")
	took := time.Since(t0)
	if code != 7 || !strings.Contains(errs, "out of file descriptors") || !strings.Contains(errs, "ulimit -n") {
		t.Fatalf("send while out of descriptors: exit %d, stderr %q; want 7 and the daemon's reason", code, errs)
	}
	// A CLI process starts in ~10 ms here; a hang is seconds.
	if took > 3*time.Second {
		t.Errorf("send while out of descriptors took %s: want at once", took)
	}

	for _, c := range held {
		c.Close()
	}
	held = nil
	var after sendResult
	waitFor(t, 10*time.Second, "a send once the connections closed", func() (bool, string) {
		out, errs, code := e.Run("send", "--workspace", "w", "--agent", "a", "b", "after", "--json")
		if code != 0 {
			return false, errs
		}
		return json.Unmarshal([]byte(out), &after) == nil, out
	})
	var c checkResult
	e.MustJSON(&c, "inbox", "--workspace", "w", "--agent", "b", "--limit", "10")
	var got []string
	for _, m := range c.Messages {
		got = append(got, m.Content)
	}
	if strings.Join(got, ",") != "before,after" || len(c.Messages) != 2 || c.Messages[0].MessageID != before.MessageID || c.Messages[1].MessageID != after.MessageID {
		t.Errorf("inbox: got %v, want before,after (the refused send sends nothing)", got)
	}
}
