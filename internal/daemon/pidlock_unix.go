//go:build unix

package daemon

import (
	"fmt"
	"os"

	"github.com/parley-dev/parley/internal/safefile"
)

// openLock opens the lock file at path without following a link, creating
// it (mode 0600) if create is set, and refuses anything but a regular file.
func openLock(path string, create bool) (*os.File, error) {
	flag := os.O_RDONLY
	if create {
		flag = os.O_RDWR | os.O_CREATE
	}
	f, err := safefile.OpenNoFollow(path, flag, 0o600)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return f, nil
}
