package daemon

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/proc"
)

// envStormChild makes the test binary a starter of TestPIDLockKillStorm.
const envStormChild = "PARLEY_PIDLOCK_STORM_LOCK"

// TestPIDLockKillStorm races waves of starting processes against kill -9 of
// the one holding the lock (issue 24: under such a storm two daemons both
// started, the survivor holding its lock on a removed parley.pid). Whatever
// the interleaving, no starter may get the lock while another live one
// holds it, and after the storm exactly one holds it, named by the file.
func TestPIDLockKillStorm(t *testing.T) {
	if path := os.Getenv(envStormChild); path != "" {
		stormChild(path)
		return
	}
	path := filepath.Join(t.TempDir(), "parley.pid")
	var (
		mu      sync.Mutex
		holders = map[int]*exec.Cmd{} // live, not yet killed
		stdins  []io.Closer
		all     []*exec.Cmd
		won     int
	)
	t.Cleanup(func() {
		for _, c := range stdins {
			c.Close() // a holder lets go and exits once its stdin ends
		}
		for _, cmd := range all {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	start := func() error {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPIDLockKillStorm$")
		cmd.Env = append(os.Environ(), envStormChild+"="+path)
		in, err := cmd.StdinPipe()
		if err != nil {
			return err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			return err
		}
		mu.Lock()
		all, stdins = append(all, cmd), append(stdins, in)
		mu.Unlock()
		line, err := bufio.NewReader(out).ReadString('\n')
		switch line = strings.TrimSpace(line); {
		case line == "running":
			return cmd.Wait()
		case line == "locked":
			mu.Lock()
			defer mu.Unlock()
			won++
			for pid := range holders {
				return fmt.Errorf("starter %d got the lock while %d, never killed, held it", cmd.Process.Pid, pid)
			}
			holders[cmd.Process.Pid] = cmd
			return nil
		default:
			return fmt.Errorf("starter %d said %q (%v)", cmd.Process.Pid, line, err)
		}
	}
	killHolder := func() {
		mu.Lock()
		defer mu.Unlock()
		for pid, cmd := range holders {
			delete(holders, pid) // before the kill: once dead, its lock is free
			if err := proc.Kill(pid); err != nil {
				t.Errorf("kill -9 %d: %v", pid, err)
			}
			go cmd.Wait()
		}
	}
	const rounds, wave = 12, 4
	for round := range rounds {
		errs := make(chan error, wave)
		for range wave {
			go func() { errs <- start() }()
		}
		if round < rounds-1 {
			// The kill lands while the wave's starters race for the lock.
			time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond)
			killHolder()
		}
		for range wave {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(holders) != 1 {
		t.Fatalf("after the storm: %d live holders, want exactly 1", len(holders))
	}
	for pid := range holders {
		li, alive := ReadLock(path)
		if !alive || li.PID != pid {
			t.Errorf("lock file: pid %d, held %v; want pid %d, held", li.PID, alive, pid)
		}
	}
	t.Logf("%d rounds of %d starters: the lock changed hands %d times", rounds, wave, won)
}

// TestPIDLockRaceDeaths is the storm at a rate only goroutines reach: each
// starter, once it holds the lock, either stops (release) or dies, which is
// closing its file without any cleanup, as kill -9 leaves it (flock and
// LockFileEx lock per open file, so goroutines contend as processes do). At
// no moment may two hold it.
func TestPIDLockRaceDeaths(t *testing.T) {
	path := filepath.Join(t.TempDir(), "parley.pid")
	var live, most, held atomic.Int32
	var wg sync.WaitGroup
	stop := time.Now().Add(3 * time.Second)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(stop); i++ {
				l, err := acquireLock(path, LockInfo{PID: os.Getpid(), SockPath: "race"})
				var are *AlreadyRunningError
				if errors.As(err, &are) {
					runtime.Gosched()
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				held.Add(1)
				n := live.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				runtime.Gosched()
				live.Add(-1)
				if (g+i)%2 == 0 {
					l.release()
				} else {
					l.f.Close() // died: the file stays, its lock goes
				}
			}
		}()
	}
	wg.Wait()
	if m := most.Load(); m != 1 {
		t.Errorf("at most %d held the lock at once, want 1", m)
	}
	if held.Load() < 20 {
		t.Errorf("the lock changed hands %d times: too few to mean anything", held.Load())
	}
	t.Logf("the lock changed hands %d times", held.Load())
}

// stormChild takes the lock at path and holds it until its stdin ends.
func stormChild(path string) {
	l, err := acquireLock(path, LockInfo{PID: os.Getpid(), SockPath: "storm"})
	var are *AlreadyRunningError
	switch {
	case errors.As(err, &are):
		fmt.Println("running")
		os.Exit(0)
	case err != nil:
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	io.Copy(io.Discard, os.Stdin)
	l.release()
	os.Exit(0)
}
