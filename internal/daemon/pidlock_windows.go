//go:build windows

package daemon

import (
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// openLock opens the lock file at path, creating it if create is set, and
// refuses anything but a regular file. FILE_SHARE_DELETE lets its holder
// remove it while others have it open (os.Open does not share deletion), and
// FILE_FLAG_OPEN_REPARSE_POINT opens a link itself rather than its target.
func openLock(path string, create bool) (*os.File, error) {
	name, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, err
	}
	access, disp := uint32(windows.GENERIC_READ), uint32(windows.OPEN_EXISTING)
	if create {
		access, disp = windows.GENERIC_READ|windows.GENERIC_WRITE, windows.OPEN_ALWAYS
	}
	h, err := windows.CreateFile(name, access, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE,
		nil, disp, windows.FILE_ATTRIBUTE_NORMAL|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(h), path)
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return f, nil
}
