package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestDaemonDescendsFromNoSession: a daemon that a session's `parley mcp
// serve` starts is not that process's descendant, nor the session's, while
// they run: a Claude Code session takes its own descendants' letters as its
// own, past the hold its person set (see TestDoorClaudeBypass).
func TestDaemonDescendsFromNoSession(t *testing.T) {
	e := newEnv(t)
	s := e.Session(nil, "--agent", "a1") // the bridge starts the daemon
	mustCall(t, s, "whoami", nil, nil)
	pid := e.daemonPID()
	chain := []int{pid}
	for p := pid; p > 1; {
		pp, err := ppidOf(p)
		if err != nil {
			t.Fatalf("parent of %d: %v", p, err)
		}
		chain = append(chain, pp)
		if pp == os.Getpid() {
			t.Fatalf("the daemon descends from the process that started its starter: chain %v", chain)
		}
		p = pp
	}
}

// ppidOf reads a process's parent from /proc.
func ppidOf(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
	var state string
	var ppid int
	if _, err := fmt.Sscan(rest, &state, &ppid); err != nil {
		return 0, err
	}
	return ppid, nil
}
