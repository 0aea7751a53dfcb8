package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	osexec "os/exec"
	"sync"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/api"
)

// Lines a stdio client writes to start a session.
const (
	initializeLine  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}` + "\n"
	initializedLine = `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"
)

// TestDeadClientsLeave: 200 clients (parley mcp serve, as Claude Code runs
// it) killed with kill -9 leave within 30 s: their agents go offline and the
// daemon holds none of their sessions, nor the goroutines that served them.
// Sessions that only sent initialize go too: at once on DELETE, and on their
// own otherwise.
func TestDeadClientsLeave(t *testing.T) {
	const n = 200
	e := newEnv(t)
	e.Must("daemon", "start")
	status := func() api.Status {
		var st api.Status
		e.MustJSON(&st, "daemon", "status", "--json")
		return st
	}
	active := func() int {
		var res api.ListAgentsResult
		e.MustJSON(&res, "agents", "--json", "--workspace", "dead")
		k := 0
		for _, a := range res.Agents {
			if a.Status == "active" {
				k++
			}
		}
		return k
	}
	base := status()

	clients := make([]*osexec.Cmd, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 8)
	for i := range clients {
		cmd := e.Cmd("mcp", "serve", "--workspace", "dead", "--agent", fmt.Sprintf("d%03d", i))
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		clients[i] = cmd
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			// The client's pipes stay open: it dies with them, by signal.
			io.WriteString(stdin, initializeLine)
			if _, err := bufio.NewReader(stdout).ReadBytes('\n'); err != nil {
				errs <- fmt.Errorf("client %d: read initialize result: %w", i, err)
				return
			}
			io.WriteString(stdin, initializedLine)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	waitUntil(t, fmt.Sprintf("%d sessions and active agents", n), func() bool { return status().Sessions == n && active() == n })

	for _, c := range clients {
		c.Process.Kill()
	}
	killed := time.Now()
	for _, c := range clients {
		c.Wait()
	}
	waitFor(t, 30*time.Second, fmt.Sprintf("the sessions of %d clients killed with -9 to end", n), func() (bool, string) {
		st, act := status(), active()
		return st.Sessions == 0 && act == 0, fmt.Sprintf("%d sessions and %d active agents, want 0", st.Sessions, act)
	})
	t.Logf("%d clients killed: all offline and their sessions ended after %s", n, time.Since(killed).Round(100*time.Millisecond))

	// What served them goes too (each ended session puts back what it
	// held, a store write each: on a busy machine that takes a moment).
	var g int
	waitFor(t, time.Minute, "the daemon's goroutines of the dead clients to end", func() (bool, string) {
		g = status().Goroutines
		return g <= base.Goroutines+20, fmt.Sprintf("%d goroutines, want about %d as before the clients started", g, base.Goroutines)
	})
	t.Logf("daemon goroutines: %d before the clients, %d after", base.Goroutines, g)

	// Sessions that only initialize: half are deleted, half abandoned.
	hc := e.httpClient()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = initializeOnly(t, hc, fmt.Sprintf("i%03d", i))
	}
	if got := status().Sessions; got != n {
		t.Fatalf("after %d initialize requests: %d sessions, want %d", n, got, n)
	}
	for _, id := range ids[:n/2] {
		req, _ := http.NewRequest(http.MethodDelete, "http://parley/mcp", nil)
		req.Header.Set("Mcp-Session-Id", id)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE session: status %d, want 204", resp.StatusCode)
		}
	}
	if got := status().Sessions; got != n-n/2 {
		t.Errorf("after DELETE of %d of %d initialize-only sessions: %d sessions, want %d", n/2, n, got, n-n/2)
	}
	waitFor(t, 30*time.Second, "the initialize-only sessions to end", func() (bool, string) {
		left := status().Sessions
		return left == 0, fmt.Sprintf("%d remain", left)
	})
}

// initializeOnly starts a session over HTTP and goes no further, returning
// its id.
func initializeOnly(t *testing.T, hc *http.Client, agent string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://parley/mcp", bytes.NewBufferString(initializeLine))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Parley-Workspace", "dead")
	req.Header.Set("Parley-Agent", agent)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: status %d, session %q", resp.StatusCode, id)
	}
	return id
}
