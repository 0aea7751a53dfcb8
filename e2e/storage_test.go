//go:build linux

package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFullDisk puts the state directory on a 4 MiB tmpfs, fills it, and checks
// that sends fail with a clear error while it is full, work again once space
// returns, and that nothing acknowledged was lost or corrupted on the way.
//
// The space that returns is what was free when the fill began. A send of 48 KiB
// costs about 180 KiB of write-ahead log (the message, then both search
// indexes each holding its one 48 KiB word), so on 2 MiB the five sends after
// space returns used it up again and the drain met a full disk: a correct 503,
// but not the recovery this test is about. 4 MiB leaves room for the drain.
func TestFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("full-disk test needs root to mount a tmpfs, and CI=true")
		}
		t.Skip("full-disk test needs root to mount a tmpfs (run the suite as root)")
	}
	e := newEnv(t)
	if err := syscall.Mount("tmpfs", e.home, "tmpfs", 0, "size=4m,mode=0700"); err != nil {
		t.Fatalf("mount tmpfs on %s: %v", e.home, err)
	}
	t.Cleanup(func() {
		e.Run("daemon", "stop", "--timeout", "5s")
		if err := syscall.Unmount(e.home, 0); err != nil {
			syscall.Unmount(e.home, syscall.MNT_DETACH)
		}
	})
	e.Must("daemon", "start")
	const ws = "disk"
	ctx := context.Background()
	hc := e.httpClient()
	content := strings.Repeat("x", 48<<10)
	var acked []string
	send := func(i int) (int, []byte) {
		t.Helper()
		code, body, err := e.apiCall(ctx, hc, "POST", "/messages", ws, "a", map[string]any{"to": "b", "content": fmt.Sprintf("%d %s", i, content)})
		if err != nil {
			t.Fatalf("send %d: the daemon is gone: %v", i, err)
		}
		if code == http.StatusOK {
			var r struct {
				ID string `json:"message_id"`
			}
			json.Unmarshal(body, &r)
			acked = append(acked, r.ID)
		}
		return code, body
	}
	for i := 0; i < 5; i++ {
		if code, body := send(i); code != http.StatusOK {
			t.Fatalf("send %d before the disk is full: %d %s", i, code, body)
		}
	}

	// Fill the file system to the last byte.
	fill := filepath.Join(e.home, "fill")
	f, err := os.Create(fill)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill: %v", err)
			}
			break
		}
	}
	f.Close()

	// SQLite may still have room in pages it holds (the WAL): sends succeed
	// until that is used up, then fail, clearly, without killing the daemon.
	var failed bool
	for i := 5; i < 200 && !failed; i++ {
		code, body := send(i)
		if code == http.StatusOK {
			continue
		}
		failed = true
		if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "full") {
			t.Errorf("send on a full disk: got %d %s, want 503 and an error saying the disk is full", code, body)
		}
		t.Logf("full disk: %d %s", code, bytes.TrimSpace(body))
	}
	if !failed {
		t.Fatal("200 sends of 48 KiB succeeded on a full 4 MiB file system")
	}
	if code, body := send(1000); code == http.StatusOK {
		t.Errorf("send while still full: got 200 %s, want an error", body)
	}

	// Space returns: sends work again, at once.
	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	for i := 2000; i < 2005; i++ {
		if code, body := send(i); code != http.StatusOK {
			t.Errorf("send %d after space returned: got %d %s, want 200", i, code, body)
		}
	}

	// Every acknowledged message is there, once, in order.
	got := e.drain(ws, "b")
	if strings.Join(got, " ") != strings.Join(acked, " ") {
		t.Errorf("inbox after the full disk: got %d messages %v, want the %d acknowledged %v", len(got), got, len(acked), acked)
	}
	e.Must("daemon", "stop")
	checkIntegrity(t, e.openDB())
}

// TestBadDatabaseRefused: a parley.db that is not SQLite, an SQLite database of
// another application, or a corrupt Parley database stops `parley daemon
// start` with a clear error (on stderr and in daemon.log), and the file is left
// byte for byte as it was: never a silent reset.
func TestBadDatabaseRefused(t *testing.T) {
	tests := []struct {
		name string
		make func(t *testing.T, path string)
		want string
	}{
		{
			name: "not sqlite",
			make: func(t *testing.T, path string) {
				os.WriteFile(path, bytes.Repeat([]byte("my notes, not a database\n"), 200), 0o600)
			},
			want: "not a Parley database",
		},
		{
			name: "another application's sqlite",
			make: func(t *testing.T, path string) {
				db, err := sql.Open("sqlite", "file:"+path)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				for _, q := range []string{"CREATE TABLE notes (body TEXT)", "INSERT INTO notes VALUES ('keep me')"} {
					if _, err := db.Exec(q); err != nil {
						t.Fatal(err)
					}
				}
			},
			want: "another application",
		},
		{
			name: "corrupt parley database",
			make: func(t *testing.T, path string) {
				// A real database with messages, then every page but the
				// first gets its b-tree header overwritten.
				home := filepath.Dir(path)
				src := envAt(t, home)
				src.Must("daemon", "start")
				for i := 0; i < 30; i++ {
					src.mustAPI("POST", "/messages", "w", "a", map[string]any{"to": "b", "content": fmt.Sprintf("message %d", i)}, nil)
				}
				src.Must("daemon", "stop")
				os.Remove(path + "-wal")
				os.Remove(path + "-shm")
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				for off := 4096; off+16 <= len(b); off += 4096 {
					copy(b[off:], bytes.Repeat([]byte{0xEE}, 16))
				}
				os.WriteFile(path, b, 0o600)
			},
			want: "corrupt",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			db := filepath.Join(e.home, "parley.db")
			tt.make(t, db)
			before, err := os.ReadFile(db)
			if err != nil {
				t.Fatal(err)
			}
			os.Remove(filepath.Join(e.home, "daemon.log"))
			out, errs, code := e.Run("daemon", "start")
			if code == 0 {
				t.Fatalf("daemon start on a bad parley.db: exit 0 (%s), want an error", out)
			}
			if !strings.Contains(errs, tt.want) {
				t.Errorf("daemon start stderr: got %q, want it to say %q", errs, tt.want)
			}
			log, _ := os.ReadFile(filepath.Join(e.home, "daemon.log"))
			if !strings.Contains(string(log), tt.want) {
				t.Errorf("daemon.log: got %q, want it to say %q", log, tt.want)
			}
			after, err := os.ReadFile(db)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Errorf("parley.db changed: %d bytes before, %d after; want it untouched", len(before), len(after))
			}
			var st struct {
				Running bool `json:"running"`
			}
			sout, _, scode := e.Run("daemon", "status", "--json")
			if json.Unmarshal([]byte(sout), &st) != nil || st.Running || scode != 7 {
				t.Errorf("daemon status after a refused start: %s, exit %d; want not running, exit 7", sout, scode)
			}
			// A client that auto-starts the daemon hits the same clear error
			// and resets nothing either.
			if _, errs, code := e.Run("send", "--workspace", "w", "--agent", "a", "b", "hello"); code == 0 || !strings.Contains(errs, tt.want) {
				t.Errorf("send with a bad parley.db: exit %d, stderr %q; want a failure that says %q", code, errs, tt.want)
			}
			if again, _ := os.ReadFile(db); !bytes.Equal(before, again) {
				t.Error("parley.db changed after a client tried to auto-start the daemon")
			}
		})
	}
}
