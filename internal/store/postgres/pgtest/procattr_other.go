//go:build unix && !linux

package pgtest

import "syscall"

// setDeathSignal: only Linux has a parent-death signal; elsewhere a
// postmaster whose test binary was killed outlives it.
func setDeathSignal(*syscall.SysProcAttr) {}
