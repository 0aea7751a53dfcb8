//go:build unix

package sqlite

import (
	"fmt"
	"syscall"
)

// fileLimit names the process's limit of open files, for an error message.
func fileLimit() string {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) != nil {
		return ""
	}
	return fmt.Sprintf("; its limit is %d", lim.Cur)
}
