package proc

import (
	"os/exec"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestZombieIsNotAlive: a child that was killed and not yet reaped is
// still in the process table, where kill(pid, 0) finds it; it is dead.
func TestZombieIsNotAlive(t *testing.T) {
	c := exec.Command("sleep", "30")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pid := c.Process.Pid
	if !Alive(pid) {
		t.Fatalf("a running child %d reads as dead", pid)
	}
	if err := c.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Wait for it to become a zombie without reaping it: waitid with
	// WNOWAIT returns once it has exited and leaves it in the table.
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatalf("waitid: %v", err)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("kill(%d, 0) = %v before the reap: the test needs a zombie", pid, err)
	}
	if Alive(pid) {
		t.Errorf("a killed, unreaped child %d reads as alive", pid)
	}
	c.Wait()
}
