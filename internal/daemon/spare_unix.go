//go:build unix

package daemon

import (
	"errors"
	"syscall"
)

// outOfFiles reports whether err is the process's or the system's table of
// open files being full.
func outOfFiles(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// fileLimit is the process's limit of open files, or 0 if unknown.
func fileLimit() uint64 {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) != nil {
		return 0
	}
	return uint64(lim.Cur)
}
