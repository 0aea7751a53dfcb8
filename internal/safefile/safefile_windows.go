//go:build windows

package safefile

import (
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/windows"
)

// privateModes is false: Windows reports made-up permission bits (every
// directory 0777); its ACLs keep other users out of a profile directory.
const privateModes = false

// openNoFollow has no O_NOFOLLOW to lean on: open, then check (openChecked).
func openNoFollow(path string, flag int, perm fs.FileMode) (*os.File, error) {
	return openChecked(path, flag, perm)
}

// CheckOwner reports whether the file at path belongs to this user: its
// owner SID is the user's (or the Administrators group, which owns what an
// elevated process of an administrator makes).
func CheckOwner(path string, st fs.FileInfo) error {
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION)
	if err != nil {
		return fmt.Errorf("read the owner of %s: %w", path, err)
	}
	owner, _, err := sd.Owner()
	if err != nil {
		return fmt.Errorf("read the owner of %s: %w", path, err)
	}
	tok := windows.GetCurrentProcessToken()
	me, err := tok.GetTokenUser()
	if err != nil {
		return fmt.Errorf("read this user's SID: %w", err)
	}
	if owner.Equals(me.User.Sid) {
		return nil
	}
	if owner.IsWellKnown(windows.WinBuiltinAdministratorsSid) {
		if ok, err := windows.Token(0).IsMember(owner); err == nil && ok { // 0: this thread's token
			return nil
		}
	}
	return &NotOwnedError{Path: path, Reason: fmt.Sprintf("belongs to %s, not to this user (%s)", owner, me.User.Sid),
		Fix: "refusing to use it; point PARLEY_HOME at a directory of your own"}
}
