package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the SQL checks read parley.db directly

	"github.com/parley-dev/parley/internal/filelock"
	"github.com/parley-dev/parley/internal/proc"
)

// apiCall calls the JSON API on the socket as agent in ws. It returns the HTTP
// status and the body; err is a transport error (the daemon is down).
func (e *env) apiCall(ctx context.Context, hc *http.Client, method, path, ws, agent string, in any) (int, []byte, error) {
	var body bytes.Buffer
	if in != nil {
		json.NewEncoder(&body).Encode(in)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://parley/api/v1"+path, &body)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Parley-Workspace", ws)
	if agent != "" {
		req.Header.Set("Parley-Agent", agent)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, err = out.ReadFrom(resp.Body)
	return resp.StatusCode, out.Bytes(), err
}

// mustAPI is apiCall that fails the test unless the answer is 200, and decodes it.
func (e *env) mustAPI(method, path, ws, agent string, in, out any) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A fresh connection each time, closed after: no idle connection stays
	// behind to hold a goroutine in the daemon (the soak test counts them).
	hc := e.httpClient()
	hc.Transport.(*http.Transport).DisableKeepAlives = true
	code, body, err := e.apiCall(ctx, hc, method, path, ws, agent, in)
	if err != nil || code != http.StatusOK {
		e.t.Fatalf("%s %s as %s/%s: %d %v\n%s", method, path, ws, agent, code, err, body)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			e.t.Fatalf("%s %s: decode %s: %v", method, path, body, err)
		}
	}
}

// openDB opens the daemon's parley.db read-only for checks by SQL; the daemon
// must be stopped.
func (e *env) openDB() *sql.DB {
	e.t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(e.home, "parley.db")+"?mode=ro")
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { db.Close() })
	return db
}

// checkIntegrity runs PRAGMA integrity_check and fails unless it says ok.
func checkIntegrity(t testing.TB, db *sql.DB) {
	t.Helper()
	rows, err := db.Query("PRAGMA integrity_check")
	if err != nil {
		t.Fatalf("integrity_check: %v", err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var s string
		rows.Scan(&s)
		got = append(got, s)
	}
	if len(got) != 1 || got[0] != "ok" {
		t.Fatalf("PRAGMA integrity_check: got %q, want ok", got)
	}
}

// killNow kills the daemon with SIGKILL and returns once it is dead: once the
// kernel released its flock on parley.pid. (A dead daemon may linger as a
// zombie until its adoptive parent reaps it, for seconds in some containers;
// kill9 waits for that.)
func (e *env) killNow() {
	e.t.Helper()
	pid := e.daemonPID()
	f, err := os.Open(filepath.Join(e.home, "parley.pid"))
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	if err := proc.Kill(pid); err != nil {
		e.t.Fatalf("kill -9 %d: %v", pid, err)
	}
	for i := 0; i < 2500; i++ {
		if filelock.TryRLock(f) == nil {
			filelock.Unlock(f)
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	e.t.Fatalf("daemon %d survived kill -9", pid)
}

// drain consumes the whole inbox of agent in ws and returns the message ids in
// the order they came.
func (e *env) drain(ws, agent string) []string {
	e.t.Helper()
	var ids []string
	for {
		var c struct {
			Messages []struct {
				ID string `json:"message_id"`
			} `json:"messages"`
			Remaining int `json:"remaining"`
		}
		e.mustAPI("POST", "/inbox/check", ws, agent, map[string]any{"limit": 1000}, &c)
		for _, m := range c.Messages {
			ids = append(ids, m.ID)
		}
		if len(c.Messages) == 0 {
			return ids
		}
	}
}

// TestCrashSafety runs a send storm through the real daemon and kills it with
// SIGKILL at random moments, at least 20 times, restarting it each time. Then
// every send that was acknowledged is delivered exactly once to each of its
// recipients, every stored message has all of its delivery rows (no half-stored
// send), nothing arrives that was never sent, and the database is intact.
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("crash storm: skipped with -short")
	}
	const (
		ws      = "crash"
		kills   = 25
		senders = 6
	)
	e := newEnv(t)
	e.Must("daemon", "start")
	readers := []string{"r0", "r1", "r2"}
	for _, r := range readers {
		e.mustAPI("POST", "/agents", ws, "", map[string]any{"name": r, "role": "reader"}, nil)
	}

	type sent struct {
		id, to string
	}
	var (
		mu      sync.Mutex
		acked   = map[string]sent{} // content -> message
		unknown = map[string]bool{} // content of sends whose outcome is unknown
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	hc := e.httpClient()
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			from := fmt.Sprintf("s%d", s)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				// Half the sends go to a role of three agents: three delivery
				// rows that must be stored together or not at all.
				to := "r0"
				if i%2 == 1 {
					to = "@reader"
				}
				content := fmt.Sprintf("%s-%d", from, i)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				code, body, err := e.apiCall(ctx, hc, "POST", "/messages", ws, from, map[string]any{"to": to, "content": content})
				cancel()
				var r struct {
					ID string `json:"message_id"`
				}
				mu.Lock()
				switch {
				case err == nil && code == http.StatusOK && json.Unmarshal(body, &r) == nil && r.ID != "":
					acked[content] = sent{r.ID, to}
				case err == nil && code < 500:
					mu.Unlock()
					t.Errorf("send %s: %d %s", content, code, body)
					return
				default: // the daemon died under the request: maybe stored, maybe not
					unknown[content] = true
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(20 * time.Millisecond) // the daemon is down: wait for the restart
				}
			}
		}()
	}

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for k := 0; k < kills; k++ {
		time.Sleep(time.Duration(50+rng.IntN(250)) * time.Millisecond)
		e.killNow()
		if out, errs, code := e.Run("daemon", "start"); code != 0 {
			log, _ := os.ReadFile(filepath.Join(e.home, "daemon.log"))
			t.Fatalf("restart %d after kill -9: exit %d\n%s%s\ndaemon.log:\n%s", k+1, code, out, errs, log)
		}
	}
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wg.Wait()
	if t.Failed() {
		return
	}
	if len(acked) < 100 {
		t.Fatalf("only %d sends acknowledged across %d kills: the storm did not run", len(acked), kills)
	}
	t.Logf("%d sends acknowledged, %d with unknown outcome, %d kills", len(acked), len(unknown), kills)
	e.Must("daemon", "stop")

	// By SQL: intact, every message whole, every acknowledged one there.
	db := e.openDB()
	checkIntegrity(t, db)
	rows, err := db.Query(`SELECT m.id, m.content, m.to_addr, COUNT(d.id) FROM messages m
		LEFT JOIN deliveries d ON d.message_seq = m.seq WHERE m.workspace = ? GROUP BY m.seq`, ws)
	if err != nil {
		t.Fatalf("query messages: %v", err)
	}
	stored := map[string]string{}   // id -> content
	storedTo := map[string]string{} // id -> address
	for rows.Next() {
		var id, content, to string
		var n int
		if err := rows.Scan(&id, &content, &to, &n); err != nil {
			t.Fatal(err)
		}
		stored[id], storedTo[id] = content, to
		want := 1
		if to == "@reader" {
			want = len(readers)
		}
		if n != want {
			t.Errorf("message %s (%s to %s) has %d delivery rows, want %d: half stored", id, content, to, n, want)
		}
	}
	rows.Close()
	var orphans int
	db.QueryRow(`SELECT COUNT(*) FROM deliveries d WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.seq = d.message_seq)`).Scan(&orphans)
	if orphans != 0 {
		t.Errorf("%d delivery rows without a message", orphans)
	}
	for content, m := range acked {
		if got, ok := stored[m.id]; !ok || got != content {
			t.Errorf("acknowledged send %s (%s): stored as %q, %v; want it stored", m.id, content, got, ok)
		}
	}
	for id, content := range stored {
		if _, ok := acked[content]; !ok && !unknown[content] {
			t.Errorf("stored message %s %q was never sent", id, content)
		}
	}

	// Through the daemon: each recipient gets each of its messages exactly once.
	e.Must("daemon", "start")
	got := map[string][]string{} // reader -> ids
	for _, r := range readers {
		got[r] = e.drain(ws, r)
	}
	for _, r := range readers {
		seen := map[string]bool{}
		for _, id := range got[r] {
			if seen[id] {
				t.Errorf("%s got message %s twice", r, id)
			}
			seen[id] = true
			if _, ok := stored[id]; !ok {
				t.Errorf("%s got message %s, which is not stored", r, id)
			}
		}
		for content, m := range acked {
			if (m.to == "@reader" || m.to == r) && !seen[m.id] {
				t.Errorf("%s never got acknowledged message %s (%s to %s)", r, m.id, content, m.to)
			}
		}
		want := 0
		for _, to := range storedTo {
			if to == "@reader" || to == r {
				want++
			}
		}
		if len(got[r]) != want {
			t.Errorf("%s drained %d messages, want the %d stored for it", r, len(got[r]), want)
		}
	}
}
