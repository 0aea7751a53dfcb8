//go:build unix

package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// privateModes says the permission bits are what keeps other users out.
const privateModes = true

// openNoFollow opens with O_NOFOLLOW, which the kernel checks as it opens:
// no window between a check and the open. O_NONBLOCK keeps a FIFO planted
// at path from blocking the open.
func openNoFollow(path string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, perm)
	if errors.Is(err, syscall.ELOOP) {
		return nil, errLink(path)
	}
	return f, err
}

// uid is the effective user id the checks compare with (a variable so that a
// test running as root can check the refusal of someone else's files).
var uid = os.Geteuid()

// CheckOwner reports whether the file at path, whose Stat is st, belongs to
// this user.
func CheckOwner(path string, st fs.FileInfo) error {
	if o := owner(st); o != uid {
		return &NotOwnedError{Path: path, Reason: fmt.Sprintf("belongs to uid %d, not to this user (uid %d)", o, uid),
			Fix: "refusing to use it; point PARLEY_HOME at a directory of your own"}
	}
	return nil
}

func owner(st fs.FileInfo) int {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(s.Uid)
	}
	return -1
}
