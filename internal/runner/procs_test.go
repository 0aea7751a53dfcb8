package runner_test

// The processes of managed agents, seen from outside through /proc (Linux):
// what the runner started, with what environment and arguments, and whether
// it is gone.

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// needProc skips a test that looks at processes where there is no /proc.
func needProc(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no /proc: %v", err)
		}
		t.Skipf("no /proc: %v", err)
	}
}

// agentProc is a process of a managed agent.
type agentProc struct {
	pid, pgid int
	env       map[string]string
	cmdline   string // its arguments, each ended by a NUL byte
}

// agentProcs lists the live processes (zombies left out) that e's daemon
// started for agent's runs and sessions, found by the marker the runner puts
// in their environment, with e's PARLEY_HOME.
func (e *env) agentProcs(agent string) []agentProc {
	ents, _ := os.ReadDir("/proc")
	var out []agentProc
	for _, d := range ents {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !bytes.Contains(b, []byte("\x00PARLEY_HOME="+e.home+"\x00")) && !bytes.HasPrefix(b, []byte("PARLEY_HOME="+e.home+"\x00")) {
			continue
		}
		env := map[string]string{}
		for _, kv := range bytes.Split(b, []byte{0}) {
			k, v, _ := strings.Cut(string(kv), "=")
			env[k] = v
		}
		if !strings.HasPrefix(env["PARLEY_RUN"], agent+"/") {
			continue
		}
		state, pgid, ok := procStat(d.Name())
		if !ok || state == "Z" {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		out = append(out, agentProc{pid: pid, pgid: pgid, env: env, cmdline: "\x00" + string(cmdline)})
	}
	return out
}

// groupsAlive reports whether a live process (zombies left out) is in one
// of the process groups.
func groupsAlive(groups map[int]bool) bool {
	ents, _ := os.ReadDir("/proc")
	for _, d := range ents {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		if state, pgid, ok := procStat(d.Name()); ok && state != "Z" && groups[pgid] {
			return true
		}
	}
	return false
}

// procStat reads the state and process group of process pid (Linux).
func procStat(pid string) (state string, pgid int, ok bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return "", 0, false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if len(f) < 3 {
		return "", 0, false
	}
	pgid, err = strconv.Atoi(f[2])
	return f[0], pgid, err == nil
}

// leader is the process that leads agent's process group (the client the
// runner started), once it runs.
func (e *env) leader(t *testing.T, agent string) agentProc {
	t.Helper()
	needProc(t)
	var p agentProc
	eventually(t, agent+"'s process", func() bool {
		for _, q := range e.agentProcs(agent) {
			if q.pid == q.pgid {
				p = q
				return true
			}
		}
		return false
	})
	return p
}
