//go:build !linux

package cli

// claudeArgs: a process's command line is read on Linux alone; elsewhere a
// session's hooks go by its settings files.
func claudeArgs(int) []string { return nil }
