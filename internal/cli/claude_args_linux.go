package cli

import (
	"bytes"
	"fmt"
	"os"
)

// claudeArgs is the command line of the Claude Code process pid (the
// session whose hook runs), or nil.
func claudeArgs(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return nil
	}
	var out []string
	for _, a := range bytes.Split(bytes.TrimSuffix(b, []byte{0}), []byte{0}) {
		out = append(out, string(a))
	}
	return out
}
