//go:build windows

package proc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"golang.org/x/sys/windows"
)

// Windows has no SIGTERM to send another process: Terminate sets a named
// event that TerminateContext waits on.
var stopSignals []os.Signal

func stopEvent(pid int) *uint16 {
	name, _ := windows.UTF16PtrFromString(`Local\parley-stop-` + strconv.Itoa(pid))
	return name
}

// OwnGroup makes cmd, once started, lead a process group of its own.
func OwnGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= windows.CREATE_NEW_PROCESS_GROUP
}

// Detach makes cmd, once started, independent of its starter's console: a
// group of its own, and a hidden console of its own for its children.
func Detach(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= windows.CREATE_NEW_PROCESS_GROUP | windows.CREATE_NO_WINDOW
	cmd.SysProcAttr.HideWindow = true
}

// KillGroup kills the process pid and every process it started (taskkill
// /T, which follows parent ids: Windows has no group signal).
func KillGroup(pid int) error {
	out, err := exec.Command("taskkill", "/T", "/F", "/PID", strconv.Itoa(pid)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("taskkill %d: %v: %s", pid, err, out)
	}
	return nil
}

// InterruptGroup is KillGroup: a console process that is not attached to
// our console cannot be sent Ctrl-C.
func InterruptGroup(pid int) error { return KillGroup(pid) }

// Terminate asks a Parley daemon pid to stop gracefully, through the event
// its TerminateContext waits on.
func Terminate(pid int) error {
	h, err := windows.OpenEvent(windows.EVENT_MODIFY_STATE, false, stopEvent(pid))
	if err != nil {
		return fmt.Errorf("process %d takes no stop request: %w", pid, err)
	}
	defer windows.CloseHandle(h)
	return windows.SetEvent(h)
}

// Kill ends the process pid at once.
func Kill(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	defer p.Release()
	return p.Kill()
}

// Alive reports whether a process pid runs.
func Alive(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION|windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	ev, err := windows.WaitForSingleObject(h, 0)
	return err == nil && ev == uint32(windows.WAIT_TIMEOUT)
}

// onTerminate cancels ctx when Terminate sets this process's stop event.
func onTerminate(ctx context.Context, cancel context.CancelFunc) func() {
	ev, err := windows.CreateEvent(nil, 1, 0, stopEvent(os.Getpid()))
	if err != nil {
		return func() {}
	}
	quit, _ := windows.CreateEvent(nil, 1, 0, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		n, _ := windows.WaitForMultipleObjects([]windows.Handle{ev, quit}, false, windows.INFINITE)
		if n == windows.WAIT_OBJECT_0 {
			cancel()
		}
	}()
	go func() {
		select {
		case <-ctx.Done():
			windows.SetEvent(quit)
		case <-done:
		}
	}()
	return func() {
		windows.SetEvent(quit)
		<-done
		windows.CloseHandle(ev)
		windows.CloseHandle(quit)
	}
}

// exitSignal: Windows processes end with a code, never a signal.
func exitSignal(*exec.ExitError) (string, bool) { return "", false }
