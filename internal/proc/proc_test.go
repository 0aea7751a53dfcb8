//go:build unix

package proc_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/proc"
)

// TestKillGroupEndsTheTree: a process in its own group and the child it
// started both end with one KillGroup, and the exit names the signal.
func TestKillGroupEndsTheTree(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 & echo $!; wait")
	proc.OwnGroup(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	if !proc.Alive(child) {
		t.Fatalf("child %d not running", child)
	}
	if err := proc.KillGroup(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("wait: got %v, want an exit error", err)
	}
	if sig, ok := proc.ExitSignal(ee); !ok || sig != syscall.SIGKILL.String() {
		t.Errorf("exit signal: got %q, %v; want %q", sig, ok, syscall.SIGKILL.String())
	}
	// The child is reparented, so reaped by someone else: wait for it.
	deadline := time.Now().Add(10 * time.Second)
	for proc.Alive(child) && !zombie(child) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d outlived its group's kill", child)
		}
		time.Sleep(5 * time.Millisecond) // polling another process's end
	}
}

// zombie reports whether pid has ended but is not reaped yet (Linux).
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return strings.HasPrefix(rest, "Z")
}

// TestTerminateContext: Terminate from another process cancels it.
func TestTerminateContext(t *testing.T) {
	if os.Getenv("PROC_TEST_CHILD") == "1" {
		ctx, stop := proc.TerminateContext(context.Background())
		defer stop()
		os.Stdout.WriteString("ready\n")
		select {
		case <-ctx.Done():
			os.Stdout.WriteString("stopped\n")
		case <-time.After(time.Minute):
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestTerminateContext$")
	cmd.Env = append(os.Environ(), "PROC_TEST_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	if l, err := r.ReadString('\n'); err != nil || l != "ready\n" {
		t.Fatalf("child: %q, %v", l, err)
	}
	if err := proc.Terminate(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if l, err := r.ReadString('\n'); err != nil || l != "stopped\n" {
		t.Errorf("after Terminate the child said %q (%v), want stopped", l, err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("child: %v", err)
	}
}
